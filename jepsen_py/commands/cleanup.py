"""`jepsen-py cleanup`: remove everything the framework made that a crash may have left behind.

Exactly the framework's own things, found by its label: Docker containers and networks labelled
`jepsen-py`, iptables rules commented `jepsen-py` on this host, and the local backend's network
namespaces, links, processes and the run directories that carry its marker file (never its whole
state root). On SSH hosts: the iptables rules commented `jepsen-py` and the daemons the framework
started there (found by the records start_daemon keeps, checked by pid, start time and boot), then,
with --db, that DB's own teardown. Nothing without the label, the marker or a record is touched. Safe
to run at any time, but it also ends runs in progress (use --run to limit it to one run's containers).
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

from jepsen_py.backends import ssh
from jepsen_py.backends.common import LABEL, RUN_LABEL
from jepsen_py.backends.docker import docker_client, remove_labelled
from jepsen_py.backends.local import cleanup_local
from jepsen_py.backends.ssh import SSHBackend, end_recorded_daemons
from jepsen_py.errors import BadInput, EnvironmentProblem
from jepsen_py.nemeses import net
from jepsen_py.nemeses.net import CHAIN, labelled_rules
from jepsen_py.plugins import check_db_flags, load_db, plugin_call
from jepsen_py.protocols import DB, Test, TestSpec
from jepsen_py.spec import parse_db_options

NAME = "cleanup"
HELP = "remove every container, network, iptables rule and process jepsen-py made (after a crash)"

log = logging.getLogger(__name__)
SINGULAR = {"containers": "container", "networks": "network", "images": "image",
            "iptables": "iptables rule", "namespaces": "network namespace", "links": "link",
            "processes": "process", "ssh hosts": "iptables rules on", "ssh processes": "process on",
            "run directories": "local run directory"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", metavar="RUN_ID", default=None,
                        help="only the Docker containers and networks of this run (label jepsen-py.run)")
    parser.add_argument("--images", action="store_true",
                        help="also remove the cached node images (they are rebuilt on the next run)")
    parser.add_argument("--ssh-nodes", metavar="N1,N2,...", default=None,
                        help="also clean these SSH hosts: the iptables rules jepsen-py left there and "
                             "the daemons it started there (paused ones too), nothing else "
                             "(default: the nodes --ssh-host names, if any; with the --ssh-* options below)")
    parser.add_argument("--db", metavar="MODULE:CLASS", default=None,
                        help="on the SSH hosts, also run this DB's teardown (what a run ends with: it "
                             "stops the DB and wipes its data), e.g. jepsen_py.raftdb:RaftMetadataDB")
    parser.add_argument("--db-option", action="append", default=None, metavar="KEY=VALUE",
                        help="with --db: a setting the DB was run with, repeatable, as `run` takes it "
                             "(a DB whose teardown depends on its settings needs the same ones)")

    ssh.add_arguments(parser.add_argument_group("ssh options (with --ssh-nodes or --ssh-host)"))


def host_iptables() -> list[str]:
    """Deletes every rule commented jepsen-py from this host's iptables; returns them."""
    if shutil.which("iptables") is None:
        return []

    listing = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True)
    if listing.returncode != 0:
        return []
    removed = []
    for rule in labelled_rules(listing.stdout):
        if rule[0] == CHAIN:
            removed.append(" ".join(rule))  # flushed with the chain below
        elif subprocess.run(["iptables", "-w", "5", "-D", *rule], capture_output=True).returncode == 0:
            removed.append(" ".join(rule))
    if f"-N {CHAIN}" in listing.stdout:
        subprocess.run(["iptables", "-w", "5", "-F", CHAIN], capture_output=True)
        subprocess.run(["iptables", "-w", "5", "-X", CHAIN], capture_output=True)
    return removed


def docker_resources(run: str | None, images: bool) -> dict[str, list[str]]:
    client = docker_client()
    removed = remove_labelled(client, {RUN_LABEL: run} if run else None)
    if images:
        removed["images"] = []
        for img in client.images.list(filters={"label": LABEL}):
            for tag in img.tags or [img.id]:
                client.images.remove(tag, force=True)
                removed["images"].append(tag)
    return removed


def ssh_spec(nodes: list[str], options: dict[str, Any], db: str = "",
             db_options: dict[str, str] | None = None) -> TestSpec:
    """The spec cleanup reaches the SSH hosts with (and builds a --db from)."""
    return TestSpec(name="cleanup", workload="", nemesis=[], nodes=nodes, time_limit=1, concurrency=1,
                    rate=0, nemesis_interval=1, seed=0, backend="ssh", read_mode=None, bugs=[],
                    db=db, results_dir=Path("."), options=options, db_options=dict(db_options or {}))


def ssh_hosts(spec: TestSpec, db: DB | None = None) -> dict[str, Any]:
    """Cleans each SSH host: its labelled iptables rules, the daemons the framework started there
    (records checked against the live process, so a reused pid is never hit), then `db`'s teardown.
    Returns what was removed, by kind, one "node: ..." item each (hosts with nothing, none)."""
    out: dict[str, Any] = {"ssh hosts": [], "ssh processes": []}
    backend = SSHBackend(spec)
    try:
        remotes = backend.setup(None)
        for node, remote in remotes.items():
            rules = net.remove_all(remote)
            if rules:
                out["ssh hosts"].append(f"{node}: {rules} rule(s)")
            out["ssh processes"] += [f"{node}: {p}" for p in end_recorded_daemons(remote)]
        if db is not None:
            test = Test(spec=spec, store_dir=Path("."), log=log, rng=random.Random(0), backend=backend,
                        db=db, remotes=dict(remotes))
            for node in remotes:
                plugin_call("--db", spec.db, f"teardown(test, {node!r})", db.teardown, test, node)
            out["ssh db teardown"] = f"ran {spec.db}'s teardown on {', '.join(remotes)}"
    finally:
        backend.teardown(None)
    return out


def cleanup(run: str | None = None, images: bool = False) -> dict[str, Any]:
    """Removes the framework's leftovers; returns what was removed, by kind."""
    out: dict[str, Any] = {}
    try:
        out.update(docker_resources(run, images))
    except EnvironmentProblem as e:
        out["docker"] = f"skipped: {e}"
    if run is None:
        out["iptables"] = host_iptables()
        out.update(cleanup_local())
    return out


def run(args: argparse.Namespace) -> int:
    keys = ("ssh_user", "ssh_key", "ssh_password", "ssh_port", "ssh_host", "ssh_sudo",
            "strict_host_key_checking", "ssh_known_hosts")
    options = {k: getattr(args, k) for k in keys}
    # the hosts a run was given: --ssh-nodes, else the nodes --ssh-host names (as for a run)
    nodes = ([n.strip() for n in args.ssh_nodes.split(",") if n.strip()] if args.ssh_nodes
             else ssh.given_nodes(options) if args.ssh_host else [])
    db_options = parse_db_options(args.db_option)
    if args.db_option and args.db is None:
        raise BadInput("--db-option: a setting of the DB that --db names; give --db too")
    if args.db is not None and not nodes:
        raise BadInput("--db: tears the DB down on SSH hosts; name them with --ssh-host or --ssh-nodes")
    spec = ssh_spec(nodes, options, args.db or "", db_options)
    db = None
    if args.db is not None:  # a bad --db or --db-option: refused before anything is touched
        check_db_flags(spec)
        db = load_db(args.db, spec)
    removed = cleanup(args.run, args.images)
    if nodes:
        removed.update(ssh_hosts(spec, db))
    total = 0
    for kind, items in removed.items():
        if isinstance(items, str):
            print(f"{kind}: {items}")
            continue
        total += len(items)
        for item in items:
            print(f"removed {SINGULAR.get(kind, kind)}: {item}")
    print(f"cleanup: removed {total} item(s)")
    return 0
