"""`jepsen-py cleanup`: remove everything the framework made that a crash may have left behind.

Exactly the framework's own things, found by its label: Docker containers and networks labelled
`jepsen-py`, iptables rules commented `jepsen-py` on this host, and the local backend's network
namespaces, links and processes. Nothing without the label is touched. Safe to run at any time, but
it also ends runs in progress (use --run to limit it to one run's containers).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
from typing import Any

from jepsen_py.errors import EnvironmentProblem

NAME = "cleanup"
HELP = "remove every container, network, iptables rule and process jepsen-py made (after a crash)"

log = logging.getLogger(__name__)
SINGULAR = {"containers": "container", "networks": "network", "images": "image",
            "iptables": "iptables rule", "namespaces": "network namespace", "links": "link",
            "processes": "process"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", metavar="RUN_ID", default=None,
                        help="only the Docker containers and networks of this run (label jepsen-py.run)")
    parser.add_argument("--images", action="store_true",
                        help="also remove the cached node images (they are rebuilt on the next run)")


def host_iptables() -> list[str]:
    """Deletes every rule commented jepsen-py from this host's iptables; returns them."""
    if shutil.which("iptables") is None:
        return []
    from nemeses.net import labelled_rules

    listing = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True)
    if listing.returncode != 0:
        return []
    removed = []
    for rule in labelled_rules(listing.stdout):
        if subprocess.run(["iptables", "-w", "5", "-D", *rule], capture_output=True).returncode == 0:
            removed.append(" ".join(rule))
    return removed


def docker_resources(run: str | None, images: bool) -> dict[str, list[str]]:
    from jepsen_py.backends.common import RUN_LABEL
    from jepsen_py.backends.docker import docker_client, remove_labelled

    client = docker_client()
    removed = remove_labelled(client, {RUN_LABEL: run} if run else None)
    if images:
        from jepsen_py.backends.common import LABEL

        removed["images"] = []
        for img in client.images.list(filters={"label": LABEL}):
            for tag in img.tags or [img.id]:
                client.images.remove(tag, force=True)
                removed["images"].append(tag)
    return removed


def cleanup(run: str | None = None, images: bool = False) -> dict[str, Any]:
    """Removes the framework's leftovers; returns what was removed, by kind."""
    out: dict[str, Any] = {}
    try:
        out.update(docker_resources(run, images))
    except EnvironmentProblem as e:
        out["docker"] = f"skipped: {e}"
    if run is None:
        out["iptables"] = host_iptables()
        try:
            from jepsen_py.backends import local
        except ImportError:
            local = None  # type: ignore[assignment]
        if local is not None and hasattr(local, "cleanup_local"):
            out.update(local.cleanup_local())
    return out


def run(args: argparse.Namespace) -> int:
    removed = cleanup(args.run, args.images)
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
