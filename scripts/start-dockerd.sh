#!/usr/bin/env bash
# Starts dockerd in the background if no engine answers (no systemd here) and waits for it.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
command -v dockerd >/dev/null || { echo "dockerd not installed: apt-get install -y docker.io iptables" >&2; exit 1; }
nohup dockerd >/var/log/jepsen-py-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then echo "dockerd is up"; exit 0; fi
    sleep 1
done
echo "dockerd did not come up; see /var/log/jepsen-py-dockerd.log" >&2
exit 1
