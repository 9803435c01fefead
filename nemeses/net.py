"""The network seam on real machines: iptables on each node drops inbound packets from chosen peers,
and removes exactly our own rules. `Iptables` is the `Net` (jepsen_py.protocols) the partition
nemeses call outside the simulator; `net_of(test)` is the test's.

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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from jepsen_py.backends.common import LABEL
from jepsen_py.protocols import Net, Remote, Test

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


def _each(test: Test, fn: Callable[[Remote], object]) -> dict[str, object]:
    """`fn` on every node we reach, in parallel."""
    nodes = [n for n in test.nodes if n in test.remotes]
    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        return dict(zip(nodes, pool.map(lambda n: fn(test.remotes[n]), nodes), strict=True))


class Iptables:
    """The `Net` of real machines: our chain's rules on every node, through test.remotes."""

    def drop_all(self, test: Test, grudge: Mapping[str, Sequence[str]],
                 first: Collection[str] = ()) -> None:
        """Makes every node in the grudge drop packets from the peers it names: the nodes in `first`
        (in parallel), then the rest (in parallel).

        A node's rule stops only what reaches it, so until every node's rule is in, a link is dead
        one way. The order says which way: a cut-off leader whose peers install first is no longer
        heard (nothing it appends after the cut reaches them, as in a real partition, which drops
        both ways at once), while one that installed first would keep replicating to whichever
        peers were still slower to install."""
        assert test.backend is not None, "partitions need a backend to resolve peer addresses"
        backend = test.backend

        def apply(node: str) -> None:
            drop_from(test.remotes[node], [backend.peer_address(m) for m in grudge[node]])

        for wave in ([n for n in grudge if n in first], [n for n in grudge if n not in first]):
            if wave:
                with ThreadPoolExecutor(max_workers=len(wave)) as pool:
                    list(pool.map(apply, wave))

    def heal(self, test: Test) -> None:
        """Flushes our chain on every node (not only those of the last grudge: a crash between
        install and bookkeeping must not leave a rule behind)."""
        _each(test, heal)

    def ready(self, test: Test) -> None:
        """The chain made now, so installing a cut later is one iptables call per node."""
        _each(test, ensure_chain)

    def remove(self, test: Test) -> None:
        """Removes the chain and its jump too, leaving the nodes' iptables as they were."""
        _each(test, remove_all)


IPTABLES = Iptables()


def net_of(test: Test) -> Net:
    """The test's network seam: its own, or iptables on the nodes."""
    return test.net if test.net is not None else IPTABLES
