#!/usr/bin/env python3
"""Runs commands against SSH hosts made for the purpose: N containers of the node image running sshd
(the tests' own, tests/sshd.py), reached on published loopback ports with host keys checked.

    python3 scripts/ssh_hosts.py --nodes 3 -- python3 -m jepsen_py.cli run --backend ssh --workload offsets
    python3 scripts/ssh_hosts.py --nodes 3 -- python3 -m jepsen_py.cli explore --backend ssh \\
        --bug zombie-leader --budget 300 --seed 1 \\; \\
        python3 -m jepsen_py.cli run --backend ssh --schedule {schedule}

Each command (commands separated by a lone `;`, quoted from the shell) gets
`--ssh-host NODE=127.0.0.1:PORT ... --ssh-key FILE --ssh-known-hosts FILE` appended and runs in turn on
the same hosts; `{schedule}` in a command stands for the schedule file of the newest explore's first
finding under --results-dir (default ./results). The containers are removed at the end (only these).
Exit: the last command's exit code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jepsen_py.backends.image import ensure_image
from tests.sshd import sshd_hosts


def split_commands(argv: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for a in argv:
        if a == ";":
            out.append([])
        else:
            out[-1].append(a)
    return [c for c in out if c]


def newest_schedule(results: Path) -> str:
    """The schedule file of the first finding of the newest explore under `results`."""
    summaries = sorted(results.glob("explore/*/explore.json"), key=lambda p: p.stat().st_mtime)
    for path in reversed(summaries):
        findings = json.loads(path.read_text()).get("findings") or []
        if findings and findings[0].get("schedule_file"):
            return str(findings[0]["schedule_file"])
    raise SystemExit(f"ssh_hosts: no finding with a schedule under {results}/explore")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=3, help="how many hosts (n1..nN)")
    p.add_argument("--results-dir", default="results", help="where {schedule} is looked for")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [; COMMAND ...]")
    args = p.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    commands = split_commands(argv)
    if not commands:
        p.error("give a command after --")
    code = 0
    with tempfile.TemporaryDirectory(prefix="ssh-hosts-") as tmp, \
            sshd_hosts(ensure_image(), Path(tmp), [f"n{i + 1}" for i in range(args.nodes)]) as hosts:
        print(f"ssh_hosts: {' '.join(hosts.hosts)}", file=sys.stderr, flush=True)
        for cmd in commands:
            if "{schedule}" in cmd:
                cmd = [a.replace("{schedule}", newest_schedule(Path(args.results_dir))) for a in cmd]
            started = time.monotonic()
            code = subprocess.run([*cmd, *hosts.flags()]).returncode
            print(f"ssh_hosts: exit {code} after {time.monotonic() - started:.1f} s: {' '.join(cmd)}",
                  file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
