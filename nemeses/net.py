"""iptables on a node: drop inbound packets from chosen peers, and remove exactly our own rules.

As Jepsen does, a node with a grudge drops what arrives from the nodes it holds the grudge against
(INPUT -s peer -j DROP); grudges are symmetric, so no connection can form either way. Every rule
carries the comment `jepsen-py`, which is how heal and `jepsen-py cleanup` find them; rules anyone
else made are never touched. Only peer addresses are named, so the controller's own traffic (from
the Docker gateway, or loopback) always passes.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from jepsen_py.backends.common import LABEL
from jepsen_py.protocols import Remote

CHAIN = "INPUT"


def drop_argv(source: str) -> list[str]:
    return ["iptables", "-w", "5", "-A", CHAIN, "-s", source, "-m", "comment", "--comment", LABEL,
            "-j", "DROP"]


def drop_from(remote: Remote, sources: Iterable[str]) -> list[str]:
    """Adds one DROP rule per source address, all in one iptables call (a comma list makes one rule
    per address); returns the addresses now dropped."""
    srcs = sorted(set(sources))
    if srcs:
        remote.exec(drop_argv(",".join(srcs)), timeout=20)
    return srcs


def labelled_rules(listing: str) -> list[list[str]]:
    """The `iptables -S` lines that carry our comment, as argv tails for `iptables -D`."""
    rules = []
    for line in listing.splitlines():
        parts = shlex.split(line)
        if len(parts) < 2 or parts[0] != "-A":
            continue
        try:
            i = parts.index("--comment")
        except ValueError:
            continue
        if i + 1 < len(parts) and parts[i + 1] == LABEL:
            rules.append(parts[1:])
    return rules


def heal(remote: Remote) -> int:
    """Deletes every rule carrying our comment on the node; returns how many."""
    res = remote.exec(["iptables", "-w", "5", "-S"], timeout=20, check=False)
    if res.exit_code != 0:
        return 0
    n = 0
    for rule in labelled_rules(res.stdout):
        if remote.exec(["iptables", "-w", "5", "-D", *rule], timeout=20, check=False).exit_code == 0:
            n += 1
    return n
