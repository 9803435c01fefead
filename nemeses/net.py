"""iptables on a node: drop inbound packets from chosen peers, and remove exactly our own rules.

As Jepsen does, a node with a grudge drops what arrives from the nodes it holds the grudge against;
grudges are symmetric, so no connection can form either way. The DROP rules live in a chain of our
own, JEPSEN-PY, reached from INPUT by one jump rule: installing a grudge is one iptables call per
node, and healing it is one flush per node, however many peers were cut. Every rule (the jump and
the drops) carries the comment `jepsen-py`, which is how teardown and `jepsen-py cleanup` find them;
rules anyone else made are never touched. Only peer addresses are named, so the controller's own
traffic (from the Docker gateway, the local bridge, or loopback) always passes.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from jepsen_py.backends.common import LABEL
from jepsen_py.protocols import Remote

CHAIN = "JEPSEN-PY"
IPT = ("iptables", "-w", "5")
COMMENT = ("-m", "comment", "--comment", LABEL)


def drop_argv(sources: Iterable[str]) -> list[str]:
    """One call; iptables turns a comma list of sources into one rule per address."""
    return [*IPT, "-A", CHAIN, "-s", ",".join(sources), *COMMENT, "-j", "DROP"]


def ensure_chain(remote: Remote) -> None:
    """Creates our chain and the jump to it from INPUT, unless they exist."""
    remote.exec([*IPT, "-N", CHAIN], timeout=20, check=False)  # exit 1 when it exists already
    jump = ["INPUT", *COMMENT, "-j", CHAIN]
    if remote.exec([*IPT, "-C", *jump], timeout=20, check=False).exit_code != 0:
        remote.exec([*IPT, "-I", jump[0], "1", *jump[1:]], timeout=20)


def drop_from(remote: Remote, sources: Iterable[str]) -> list[str]:
    """Drops packets from every source address; returns the addresses now dropped."""
    srcs = sorted(set(sources))
    if not srcs:
        return srcs
    if remote.exec(drop_argv(srcs), timeout=20, check=False).exit_code != 0:
        ensure_chain(remote)  # first fault on this node: make the chain, then the rules
        remote.exec(drop_argv(srcs), timeout=20)
    return srcs


def heal(remote: Remote) -> None:
    """Lets every peer through again: one flush of our chain (the empty chain and jump stay)."""
    remote.exec([*IPT, "-F", CHAIN], timeout=20, check=False)


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


def remove_all(remote: Remote) -> int:
    """Deletes every rule carrying our comment, then our chain; returns how many rules went."""
    res = remote.exec([*IPT, "-S"], timeout=20, check=False)
    if res.exit_code != 0:
        return 0
    n = 0
    for rule in labelled_rules(res.stdout):
        if rule[0] == CHAIN:
            continue  # the flush below takes these
        if remote.exec([*IPT, "-D", *rule], timeout=20, check=False).exit_code == 0:
            n += 1
    n += sum(1 for rule in labelled_rules(res.stdout) if rule[0] == CHAIN)
    if f"-N {CHAIN}" in res.stdout:
        remote.exec([*IPT, "-F", CHAIN], timeout=20, check=False)
        remote.exec([*IPT, "-X", CHAIN], timeout=20, check=False)
    return n
