#!/usr/bin/env bash
# Everything jepsen-py needs on a fresh Debian 12 machine (root): system packages, the Python
# package and its test tools, a running Docker engine and the cached node image. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

echo "== system packages"
apt-get update -qq
apt-get install -y -qq docker.io iptables debootstrap libfaketime iproute2 procps ruby nodejs \
    chromium chromium-driver openjdk-17-jre-headless >/dev/null

echo "== python packages"
# the spark extras (PySpark, its Connect client) and the test tools: CI runs every test
python3 -m pip install -q --disable-pip-version-check -e '.[spark,spark-connect,test]' 2>&1 \
    | grep -v "^WARNING: Location" || true
# examples/postgres's driver (the one dependency its pyproject.toml adds), for its tests; the
# example itself is run from its own directory, not installed
python3 -m pip install -q --disable-pip-version-check 'pg8000>=1.30' 2>&1 \
    | grep -v "^WARNING: Location" || true
python3 -c "import jepsen_py, docker, paramiko, pyspark, plotly, pyarrow, selenium, pg8000" \
    || { echo "python packages did not install" >&2; exit 1; }

echo "== docker engine"
bash scripts/start-dockerd.sh

echo "== node image (air-gapped route unless JEPSEN_PY_IMAGE_BASE=debian)"
jepsen-py image
