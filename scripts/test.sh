#!/usr/bin/env bash
# The README's test command: lint, then the whole test suite (the 25 slowest tests listed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
python3 -m pytest -q --durations=25 "$@"
