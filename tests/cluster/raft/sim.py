"""An in-process cluster of RawNodes over a simulated network, with Raft's invariants checked.

The network holds every sent message until the test delivers, drops, duplicates or reorders it;
partitions drop messages across groups at delivery time; a crash throws away everything a node had
not persisted (its RawNode, unstable entries, unsent messages, the state machine in memory) and keeps
only its MemoryStorage, which the Ready loop below writes before sending, as the contract demands.

Invariants (Raft paper, Figure 3), checked by `check()` after every step:
- election safety: at most one leader per term (over the whole run);
- log matching: two logs with an entry of the same index and term are identical up to it;
- leader completeness: a leader of a term after an entry was seen committed holds that entry;
- state machine safety: no two nodes apply different commands at one index (digests agree too);
- read safety: a ReadState's index is at least every commit index seen before the read was asked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.cluster.raft import (
    LEADER,
    Config,
    Entry,
    HardState,
    MemoryStorage,
    Message,
    ProposalDropped,
    RawNode,
    ReadState,
)
from jepsen_py.cluster.raft.messages import MSG_SNAP


class InvariantViolation(AssertionError):
    """A Raft safety property does not hold."""


def _digest(prev: str, data: dict[str, Any] | None) -> str:
    return hashlib.sha256((prev + json.dumps(data, sort_keys=True)).encode()).hexdigest()[:16]


@dataclass
class SimNode:
    id: str
    storage: MemoryStorage
    raw: RawNode | None
    applied: int = 0
    digest: str = ""
    read_states: list[ReadState] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return self.raw is not None


class Cluster:
    """n nodes, a message pool, partitions, crashes, and the invariant bookkeeping."""

    def __init__(
        self,
        n: int,
        config: Config | None = None,
        node_class: type[RawNode] = RawNode,
        seed: int = 0,
    ) -> None:
        self.ids = [f"n{i + 1}" for i in range(n)]
        self.base_config = config or Config()
        self.node_class = node_class
        self.seed = seed
        self.nodes: dict[str, SimNode] = {}
        self._restart_counts: dict[str, int] = {}
        for i in self.ids:
            storage = MemoryStorage(self.ids)
            self.nodes[i] = SimNode(i, storage, self._new_raw(i, storage, 0))
        self.net: list[Message] = []
        self.groups: dict[str, int] = {}  # node -> partition group; empty: fully connected
        self.leaders_by_term: dict[int, str] = {}
        self.committed: dict[int, tuple[int, Any, int]] = {}  # index -> (term, data, term seen at)
        self.applied_at: dict[int, Any] = {}
        self.digest_at: dict[int, str] = {}
        self.pending_reads: dict[str, int] = {}  # ctx -> commit floor when asked
        self.read_count = 0
        self.proposal_seq = 0
        self.restarts = 0
        self.on_apply: Callable[[str, Entry], None] | None = None

    # ---- node lifecycle

    def _new_raw(self, node_id: str, storage: MemoryStorage, applied: int) -> RawNode:
        seed = self.seed * 1000 + self._restart_counts.get(node_id, 0)
        cfg = Config(**{**self.base_config.__dict__, "applied": applied, "seed": seed})
        return self.node_class(node_id, self.ids, storage, cfg)

    def crash(self, node_id: str) -> None:
        self.nodes[node_id].raw = None

    def crash_mid_ready(self, node_id: str, stage: int) -> None:
        """Crashes while handling a Ready: stage 0 persisted nothing, 1 the snapshot and entries but
        not the hard state, 2 everything but sent no message."""
        node = self.nodes[node_id]
        raw = node.raw
        if raw is None:
            return
        if raw.has_ready():
            rd = raw.ready()
            if stage >= 1:
                if rd.snapshot is not None:
                    node.storage.apply_snapshot(rd.snapshot)
                node.storage.append(rd.entries)
            if stage >= 2 and rd.hard_state is not None:
                node.storage.set_hard_state(rd.hard_state)
        self.crash(node_id)

    def restart(self, node_id: str) -> None:
        node = self.nodes[node_id]
        if node.alive:
            return
        self._restart_counts[node_id] = self._restart_counts.get(node_id, 0) + 1
        self.restarts += 1
        snap = node.storage.snapshot()
        # The state machine in memory is gone: rebuild it from the persisted snapshot.
        node.applied = snap.index
        node.digest = str(snap.data.get("digest", "")) if snap.index else ""
        node.raw = self._new_raw(node_id, node.storage, node.applied)

    def live(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.raw is not None]

    # ---- the Ready loop, per the contract

    def process_ready(self, node: SimNode) -> bool:
        raw = node.raw
        if raw is None or not raw.has_ready():
            return False
        rd = raw.ready()
        # 1. persist
        if rd.snapshot is not None:
            node.storage.apply_snapshot(rd.snapshot)
        node.storage.append(rd.entries)
        if rd.hard_state is not None:
            node.storage.set_hard_state(rd.hard_state)
        # 2. send
        self.net.extend(rd.messages)
        # 3. apply
        if rd.snapshot is not None:
            snap = rd.snapshot
            node.applied = snap.index
            node.digest = str(snap.data.get("digest", ""))
            self._record_digest(node.id, snap.index, node.digest)
        for e in rd.committed_entries:
            if e.index != node.applied + 1:
                raise InvariantViolation(f"{node.id} applies {e.index} after {node.applied}: gap or repeat")
            self._record_apply(node.id, e)
            node.applied = e.index
            node.digest = _digest(node.digest, e.data)
            self._record_digest(node.id, e.index, node.digest)
        for rs in rd.read_states:
            floor = self.pending_reads.pop(rs.context, None)
            if floor is not None and rs.index < floor:
                raise InvariantViolation(
                    f"stale read on {node.id}: read index {rs.index} < commit {floor} known before the read"
                )
            node.read_states.append(rs)
        raw.advance(rd)
        return True

    def _record_apply(self, node_id: str, e: Entry) -> None:
        if e.index in self.applied_at and self.applied_at[e.index] != e.data:
            raise InvariantViolation(
                f"state machine safety: {node_id} applies {e.data!r} at {e.index}, "
                f"another node applied {self.applied_at[e.index]!r}"
            )
        self.applied_at[e.index] = e.data
        if self.on_apply is not None:
            self.on_apply(node_id, e)

    def _record_digest(self, node_id: str, index: int, digest: str) -> None:
        prev = self.digest_at.setdefault(index, digest)
        if prev != digest:
            raise InvariantViolation(f"state machine safety: {node_id} state at {index} differs from others")

    def pump(self) -> None:
        """Processes every pending Ready (messages go into the network, not delivered)."""
        while any(self.process_ready(n) for n in self.live()):
            pass
        self.check()

    # ---- the network

    def connected(self, a: str, b: str) -> bool:
        return self.groups.get(a, 0) == self.groups.get(b, 0)

    def deliver_at(self, pos: int) -> None:
        if not self.net:
            return
        m = self.net.pop(pos % len(self.net))
        self._deliver(m)

    def _deliver(self, m: Message) -> None:
        dst = self.nodes[m.dst]
        src = self.nodes.get(m.src)
        if dst.raw is None or not self.connected(m.src, m.dst):
            # A transport notices a dead or unreachable peer: report it, as the edges do.
            if src is not None and src.raw is not None:
                src.raw.report_unreachable(m.dst)
                if m.type == MSG_SNAP:
                    src.raw.report_snapshot(m.dst, failed=True)
            return
        dst.raw.step(m)
        if m.type == MSG_SNAP and src is not None and src.raw is not None:
            src.raw.report_snapshot(m.dst, failed=False)

    def deliver_all(self, limit: int = 10_000) -> None:
        """FIFO delivery until the network is quiet (or `limit` messages)."""
        n = 0
        while self.net and n < limit:
            self._deliver(self.net.pop(0))
            n += 1
            self.pump()

    def drop_at(self, pos: int) -> None:
        if self.net:
            self.net.pop(pos % len(self.net))

    def duplicate_at(self, pos: int) -> None:
        if self.net:
            self.net.append(self.net[pos % len(self.net)])

    def partition(self, mask: int) -> None:
        """Splits the nodes by the bits of mask (bit i set: node i in group 1)."""
        self.groups = {i: (mask >> k) & 1 for k, i in enumerate(self.ids)}

    def isolate(self, node_id: str) -> None:
        self.groups = {i: int(i == node_id) for i in self.ids}

    def heal(self) -> None:
        self.groups = {}

    # ---- clients

    def tick(self, node_id: str) -> None:
        raw = self.nodes[node_id].raw
        if raw is not None:
            raw.tick()

    def tick_all(self) -> None:
        for n in self.live():
            n.raw.tick()  # type: ignore[union-attr]

    def propose(self, node_id: str, value: Any = None) -> bool:
        raw = self.nodes[node_id].raw
        if raw is None:
            return False
        self.proposal_seq += 1
        try:
            raw.propose({"seq": self.proposal_seq, "v": value})
        except ProposalDropped:
            return False
        return True

    def read(self, node_id: str) -> str | None:
        raw = self.nodes[node_id].raw
        if raw is None:
            return None
        self.read_count += 1
        ctx = f"r{self.read_count}"
        floor = max((n.raw.raft.raft_log.committed for n in self.live()), default=0)  # type: ignore[union-attr]
        floor = max(floor, max(self.committed, default=0))
        self.pending_reads[ctx] = floor
        try:
            raw.read_index(ctx)
        except ProposalDropped:
            del self.pending_reads[ctx]
            return None
        return ctx

    def compact(self, node_id: str) -> None:
        """Snapshots the node's applied state and discards the log up to it."""
        node = self.nodes[node_id]
        if node.raw is None:
            return
        st = node.storage
        if node.applied <= st.snapshot().index or node.applied > st.last_index():
            return
        st.create_snapshot(node.applied, self.ids, {"digest": node.digest})
        st.compact(node.applied)

    # ---- invariants

    def leaders(self) -> list[SimNode]:
        return [n for n in self.live() if n.raw.raft.state == LEADER]  # type: ignore[union-attr]

    def check(self) -> None:
        live = self.live()
        for n in live:
            r = n.raw.raft  # type: ignore[union-attr]
            if r.state == LEADER:
                prev = self.leaders_by_term.setdefault(r.term, n.id)
                if prev != n.id:
                    raise InvariantViolation(f"election safety: {prev} and {n.id} both led term {r.term}")
        # Record what is committed (with the observer's term: leaders after it must hold it).
        top = max(self.committed, default=0)
        for n in live:
            r = n.raw.raft  # type: ignore[union-attr]
            log = r.raft_log
            lo = max(log.first_index(), top + 1)
            if lo <= log.committed:
                for e in log.slice(lo, log.committed + 1):
                    self.committed.setdefault(e.index, (e.term, e.data, r.term))
        logs = {n.id: n.raw.raft.raft_log for n in live}  # type: ignore[union-attr]
        self._check_log_matching(logs)
        for n in live:
            r = n.raw.raft  # type: ignore[union-attr]
            if r.state != LEADER:
                continue
            log = r.raft_log
            for i, (term, data, seen_at) in self.committed.items():
                if seen_at >= r.term or i < log.first_index():
                    continue
                if i > log.last_index() or log.term(i) != term or log.slice(i, i + 1)[0].data != data:
                    raise InvariantViolation(
                        f"leader completeness: leader {n.id} of term {r.term} lacks entry {i} "
                        f"committed by term {seen_at}"
                    )

    @staticmethod
    def _check_log_matching(logs: dict[str, Any]) -> None:
        ids = sorted(logs)
        ents = {i: {e.index: e for e in logs[i].all_entries()} for i in ids}
        for a_pos, a in enumerate(ids):
            for b in ids[a_pos + 1 :]:
                ea, eb = ents[a], ents[b]
                common = [i for i in ea if i in eb and ea[i].term == eb[i].term]
                if not common:
                    continue
                top = max(common)
                for i in range(top, 0, -1):
                    if i not in ea or i not in eb:
                        break  # compacted on one side: covered by the state machine digests
                    if ea[i] != eb[i]:
                        raise InvariantViolation(
                            f"log matching: {a} and {b} agree on ({top}, term {ea[top].term}) "
                            f"but differ at {i}: {ea[i]} vs {eb[i]}"
                        )

    # ---- liveness

    def stabilize(self, max_rounds: int = 400) -> SimNode:
        """Heals everything and runs a fair schedule until one leader is known to all nodes."""
        self.heal()
        for i in self.ids:
            self.restart(i)
        self.pump()
        for _ in range(max_rounds):
            self.tick_all()
            self.pump()
            self.deliver_all()
            leaders = self.leaders()
            if len(leaders) == 1:
                lead = leaders[0]
                if all(n.raw.raft.lead == lead.id for n in self.live()):  # type: ignore[union-attr]
                    return lead
        raise InvariantViolation(f"liveness: no stable leader after {max_rounds} rounds of a healed network")

    def commit_everywhere(self, max_rounds: int = 400) -> None:
        """After stabilize(): a proposal commits and is applied on every node."""
        lead = self.stabilize(max_rounds)
        self.propose(lead.id, "liveness")
        want = self.proposal_seq
        for _ in range(max_rounds):
            self.pump()
            self.deliver_all()
            done = all(
                any(isinstance(d, dict) and d.get("seq") == want for i, d in self.applied_at.items()
                    if i <= n.applied)
                for n in self.live()
            )
            if done:
                return
            self.tick_all()
        raise InvariantViolation("liveness: a proposal to a stable leader never committed everywhere")


# ---- helpers for the paper-section unit tests


def make_node(node_id: str, peers: list[str], config: Config | None = None,
              storage: MemoryStorage | None = None) -> tuple[RawNode, MemoryStorage]:
    storage = storage if storage is not None else MemoryStorage(peers)
    return RawNode(node_id, peers, storage, config or Config(pre_vote=False, check_quorum=False)), storage


def drain(raw: RawNode, storage: MemoryStorage) -> tuple[list[Message], list[Entry], list[ReadState]]:
    """Runs the Ready loop to quiescence: persists, then returns (messages, applied, read states)."""
    msgs: list[Message] = []
    applied: list[Entry] = []
    reads: list[ReadState] = []
    while raw.has_ready():
        rd = raw.ready()
        if rd.snapshot is not None:
            storage.apply_snapshot(rd.snapshot)
        storage.append(rd.entries)
        if rd.hard_state is not None:
            storage.set_hard_state(rd.hard_state)
        msgs.extend(rd.messages)
        applied.extend(rd.committed_entries)
        reads.extend(rd.read_states)
        raw.advance(rd)
    return msgs, applied, reads


def storage_with_log(peers: list[str], terms: list[int], hard_term: int = 0) -> MemoryStorage:
    """A storage holding entries 1..len(terms) with the given terms (data names the index)."""
    st = MemoryStorage(peers)
    st.append([Entry(term=t, index=i + 1, data={"i": i + 1, "t": t}) for i, t in enumerate(terms)])
    st.set_hard_state(HardState(term=max([hard_term, *terms]), vote=None, commit=0))
    return st
