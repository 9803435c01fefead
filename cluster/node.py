"""The node daemon: `python3 -m cluster.node --id n1 --peers n1=h:p,... --data-dir D --client-port P`.

One process, one asyncio event loop, one thread. The pure Raft core (cluster.raft) is driven here
with ticks from a timer, messages from the transport and requests from the client server, and every
Ready it yields is handled in the order its contract demands: persist (one fsync per Ready, so
proposals that arrived together share it), then send, then apply, then advance. Standard library only:
the node starts on any bare python3 after an upload.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import posixpath
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import snapshots
from .bugs import BUGS, NAMES, NO_BUGS, Bugs
from .io import NodeEnv
from .raft.config import READ_ONLY_LEASE, READ_ONLY_SAFE, Config
from .raft.errors import ProposalDropped, RaftError
from .raft.messages import LEADER, Entry, HardState, Message, Ready
from .raft.rawnode import RawNode
from .raft.storage import MemoryStorage
from .readmodes import READ_MODES
from .realio import real_env
from .server import ClientServer
from .state_machine import MetadataState
from .transport import Transport, describe_stats
from .wal import WAL, WALError

MAX_PENDING = 20_000


@dataclass(frozen=True)
class LeaderRules:
    """How a leader makes sure it still leads before it answers, decided once per node."""

    #: the leader steps down when a quorum has been silent for an election timeout
    check_quorum: bool
    #: the core's read mode: READ_ONLY_SAFE (ReadIndex) or READ_ONLY_LEASE
    read_only: str
    #: a leader answers reads from its own state at once, asking nobody
    leader_reads_locally: bool
    #: how much shorter than an election timeout the read lease is: the clock-drift bound
    lease_margin_ticks: int
    #: ticks follow the monotonic clock (a leader's due ticks are applied on every input, up to an
    #: election timeout at once; a clock going back gives up the lease); otherwise a tick is one
    #: timer firing, whatever time passed
    ticks_follow_clock: bool


def leader_rules(read_mode: str, bugs: Bugs) -> LeaderRules:
    """The one place zombie-leader and lease-no-drift-bound are decided."""
    if bugs.zombie_leader:
        # KRaft before KAFKA-15489: no CheckQuorum, so a leader cut off from everyone never learns
        # it was deposed, and it answers reads from its own state (a lease needs CheckQuorum)
        check_quorum, read_only, leader_local = False, READ_ONLY_SAFE, True
    else:
        check_quorum = True
        read_only = READ_ONLY_LEASE if read_mode == "lease" else READ_ONLY_SAFE
        leader_local = False
    if bugs.lease_no_drift_bound:
        # the lease lasts the full election timeout and the tick count stands for the time passed,
        # so after a pause or a clock going back the lease still looks fresh
        margin, follow_clock = 0, False
    else:
        margin, follow_clock = Config.lease_margin_ticks, True
    return LeaderRules(check_quorum=check_quorum, read_only=read_only, leader_reads_locally=leader_local,
                       lease_margin_ticks=margin, ticks_follow_clock=follow_clock)


class StartupError(Exception):
    """The node cannot start; the message is the one line printed and logged."""


@dataclass
class NodeConfig:
    id: str
    peers: dict[str, tuple[str, int]]
    data_dir: str
    client_port: int
    client_host: str | None = None
    peer_listen_host: str | None = None
    read_mode: str = "read-index"
    bugs: Bugs = NO_BUGS
    tick_ms: int = 50
    election_tick: int = 10
    heartbeat_tick: int = 1
    snapshot_entries: int = 10_000
    retain_entries: int = 1_000
    fsync: bool = True
    cluster_id: str = ""
    log_file: str = ""
    request_timeout: float = 5.0
    max_batch_entries: int = 256
    max_inflight_msgs: int = 256
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.cluster_id:
            self.cluster_id = default_cluster_id(self.peers)
        if not self.log_file:
            self.log_file = posixpath.join(self.data_dir, "node.log")


def default_cluster_id(peers: dict[str, tuple[str, int]]) -> str:
    """A stable id derived from the membership: the same --peers means the same cluster."""
    spec = ",".join(f"{n}={h}:{p}" for n, (h, p) in sorted(peers.items()))
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def parse_peers(spec: str) -> dict[str, tuple[str, int]]:
    """`n1=host:port,n2=host:port` -> {"n1": ("host", port)}; StartupError naming the bad part."""
    peers: dict[str, tuple[str, int]] = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, addr = part.partition("=")
        host, colon, port = addr.rpartition(":")
        if not eq or not colon or not name or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise StartupError(f"--peers: {part!r} is not of the form id=host:port")
        if name in peers:
            raise StartupError(f"--peers: node {name!r} is listed twice")
        peers[name] = (host.strip("[]"), int(port))
    if not peers:
        raise StartupError("--peers: no peers given")
    return peers


class NodeLog:
    """Appends lines stamped with the node's wall clock to its log file (flushed per line: a kill -9
    loses nothing)."""

    def __init__(self, path: str, node_id: str, env: NodeEnv) -> None:
        parent = posixpath.dirname(path)
        if parent:
            env.disk.makedirs(parent)
        self._append = env.disk.open_log(path)
        self._clock = env.clock
        self.node_id = node_id

    def __call__(self, line: str) -> None:
        t = self._clock.wall()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
        self._append(f"{stamp} {self.node_id} {line}")

    def close(self) -> None:
        close = getattr(self._append, "close", None)
        if close is not None:
            close()


@dataclass
class ReadRound:
    """One ReadIndex (or lease) request to the core, serving every read that arrived before it."""

    context: str
    started: float
    waiters: list[asyncio.Future[int]]


class Node:
    """One Raft peer with its storage, state machine, transport and client API."""

    def __init__(self, cfg: NodeConfig, log: Callable[[str], None], *, env: NodeEnv) -> None:
        self.cfg = cfg
        #: sockets, files, clock readings, randomness and exit: the only ways out of this process
        self.env = env
        self.clock = env.clock
        self.rules = leader_rules(cfg.read_mode, cfg.bugs)
        #: the split-brain-metadata bug's node-local store; unused by the correct build
        self.local_meta = MetadataState()
        self.log = log
        self.boot = env.entropy(4).hex()
        self._seq = 0
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.read_queue: list[asyncio.Future[int]] = []
        self.read_round: ReadRound | None = None
        self.read_waiting: list[tuple[int, asyncio.Future[int]]] = []
        self._ready_scheduled = False
        self._last_seen: tuple[str, int, str | None] | None = None
        self._announced_term = -1
        self.stopping = asyncio.Event()
        self.started_at = self.clock.wall()
        self.applied_entries = 0
        self.readies = 0
        self.transport: Transport | None = None
        self._last_tick = self.clock.monotonic()
        #: the task that ticks the core while the node runs
        self._ticking = False
        self._ticker: asyncio.Future[None] | None = None
        #: the event loop the node runs on (set by run()): its work is scheduled there even when an
        #: input comes from outside it (the simulator's observer asking for status)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open_storage()

    # ---- startup ----------------------------------------------------------------------------------

    def _open_storage(self) -> None:
        cfg, disk = self.cfg, self.env.disk
        disk.makedirs(cfg.data_dir)
        if not disk.lock(posixpath.join(cfg.data_dir, "LOCK")):
            raise StartupError(f"{cfg.data_dir} is in use by another node process")
        for name in disk.listdir(cfg.data_dir):
            if name.endswith(".tmp"):  # a snapshot or WAL rewrite cut short by a crash
                disk.remove(posixpath.join(cfg.data_dir, name))
                self.log(f"removed {name}, left over from an interrupted write")
        try:
            self.wal, rec = WAL.open(disk, cfg.data_dir, cfg.cluster_id, cfg.id, log=self.log,
                                     fsync=cfg.fsync, bugs=cfg.bugs)
            snap = snapshots.load_newest(disk, cfg.data_dir, cfg.cluster_id, rec.snapshot_index, log=self.log)
        except (WALError, OSError) as e:
            raise StartupError(str(e)) from None
        self.storage = MemoryStorage(list(cfg.peers))
        self.state = MetadataState()
        applied = 0
        if snap is not None:
            self.storage.apply_snapshot(snap)
            try:
                self.state = MetadataState.restore(snap.data)
            except (KeyError, TypeError, ValueError) as e:
                raise StartupError(f"snapshot {snap.index} in {cfg.data_dir} is malformed: {e!r}") from None
            applied = snap.index
            self.log(f"recovered snapshot at index {snap.index} term {snap.term}")
        entries = [e for e in rec.entries if e.index > applied]
        if snap is not None and entries:
            # A snapshot sent by the leader replaces a log that did not match it. If the node died
            # after saving the snapshot file but before rewriting the WAL, the WAL's entries after the
            # snapshot belong to that old, divergent log: keep them only if the WAL agrees with the
            # snapshot at its index.
            at = [e.term for e in rec.entries if e.index == snap.index]
            wal_term = at[0] if at else (rec.snapshot_term if rec.snapshot_index == snap.index else None)
            if wal_term != snap.term:
                self.log(f"dropping {len(entries)} WAL entries after snapshot {snap.index}: they do not "
                         f"follow it (term {wal_term} vs {snap.term})")
                entries = []
        if entries and entries[0].index != applied + 1:
            raise StartupError(
                f"{cfg.data_dir}: WAL entries start at {entries[0].index} but the snapshot ends at {applied}"
            )
        self.storage.append(entries)
        hs = rec.hard_state
        last = self.storage.last_index()
        if hs.commit > last:
            raise StartupError(f"{cfg.data_dir}: hard state commit {hs.commit} is past the last entry {last}")
        if hs.commit < applied:
            hs = HardState(term=hs.term, vote=hs.vote, commit=applied)
        self.storage.set_hard_state(hs)
        raft_cfg = Config(
            election_tick=cfg.election_tick,
            heartbeat_tick=cfg.heartbeat_tick,
            pre_vote=True,
            check_quorum=self.rules.check_quorum,
            read_only=self.rules.read_only,
            lease_margin_ticks=self.rules.lease_margin_ticks,
            max_inflight_msgs=cfg.max_inflight_msgs,
            max_batch_entries=cfg.max_batch_entries,
            applied=applied,
            seed=cfg.seed if cfg.seed is not None else int.from_bytes(self.env.entropy(4), "big"),
        )
        try:
            self.raw = RawNode(cfg.id, list(cfg.peers), self.storage, raft_cfg)
        except RaftError as e:
            raise StartupError(f"raft: {e}") from None
        self.log(
            f"started: cluster {cfg.cluster_id}, peers {','.join(cfg.peers)}, read mode {cfg.read_mode}, "
            f"term {hs.term}, commit {hs.commit}, last index {last}, pid {self.env.pid}"
        )

    # ---- inputs -------------------------------------------------------------------------------------

    def on_peer_message(self, msg: Message) -> None:
        self.catch_up_ticks()
        try:
            self.raw.step(msg)
        except RaftError as e:
            self.log(f"raft rejected {msg.type} from {msg.src}: {e}")
        except Exception:
            # a message the core cannot digest must not take the node down (a peer speaking garbage)
            self.log(f"raft failed on {msg.type} from {msg.src}, message dropped:\n{traceback.format_exc()}")
        self.schedule_ready()

    def on_unreachable(self, peer: str) -> None:
        self.raw.report_unreachable(peer)
        self.schedule_ready()

    def on_snapshot_status(self, peer: str, failed: bool) -> None:
        self.raw.report_snapshot(peer, failed)
        self.schedule_ready()

    def propose(self, cmd: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Hands `cmd` to the core; the future resolves with its apply result on this node.

        Raises ProposalDropped (definite: not in any log) when the core refuses it.
        """
        if len(self.pending) >= MAX_PENDING:
            raise ProposalDropped("overloaded: too many proposals in flight")
        self.catch_up_ticks()
        self._seq += 1
        rid = f"{self.cfg.id}.{self.boot}.{self._seq}"
        self.raw.propose({**cmd, "rid": rid})
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        fut.add_done_callback(lambda _f: self.pending.pop(rid, None))
        self.schedule_ready()
        return fut

    def read_barrier(self, local: bool = False) -> asyncio.Future[int]:
        """Resolves (with the read index) once a linearizable read may be served from local state.

        Reads that arrive while a round is in flight wait for the next round (a round only covers
        reads that arrived before it began), so under load one heartbeat round serves many reads.
        """
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if (local or self.cfg.read_mode == "local"
                or (self.rules.leader_reads_locally and self.leader() == self.cfg.id)):
            fut.set_result(self.state.applied_index)
            return fut
        self.catch_up_ticks()
        if self.leader() is None:
            raise ProposalDropped("no leader known")
        self.read_queue.append(fut)
        if self.read_round is None:
            self._start_read_round()
        return fut

    def _start_read_round(self) -> None:
        waiters = [f for f in self.read_queue if not f.done()]
        self.read_queue = []
        if not waiters:
            return
        self._seq += 1
        ctx = f"{self.cfg.id}.{self.boot}.r{self._seq}"
        self.read_round = ReadRound(ctx, self.clock.monotonic(), waiters)
        self.raw.read_index(ctx)
        self.schedule_ready()

    def catch_up_ticks(self, from_timer: bool = False) -> None:
        """Gives the core every tick that is due by the monotonic clock, before it acts on anything.

        Called on every input, not only by the timer: after a stall (SIGSTOP, a long fsync, a
        starved CPU) the ticks that elapsed are applied before the first request or message is
        handled, so a leader that slept through its lease or its CheckQuorum window learns it before
        it serves a lease read.

        A stall cannot be told from the clock stepping forward (libfaketime steps the monotonic
        clock too), so one reading is trusted only as far as safety needs. A leader takes at most an
        election timeout of ticks at once: its lease ends, and CheckQuorum judges once what it heard
        before the gap (a second judgement within the same burst could only see silence, since no
        message arrives between the ticks of one burst, and would depose a leader its followers had
        been answering). Any other node takes at most a quarter of one: counting less time than
        passed only makes it wait longer before it campaigns or grants a vote, which no lease can be
        hurt by, while a whole timeout at once made every node whose clock jumped (a fault on all of
        them, a strobe) campaign at the same instant, hundreds of terms a minute.

        Unless ticks do not follow the clock (LeaderRules): then the node trusts its own tick count
        as the time that passed (one tick per timer firing, as a ticker that drops missed ticks does).
        """
        interval = self.cfg.tick_ms / 1000
        now = self.clock.monotonic()
        if not self.rules.ticks_follow_clock:
            if from_timer:
                self.raw.tick()
                self._last_tick = now
                self.schedule_ready()
            return
        back = now < self._last_tick - interval
        due = 0 if back else int((now - self._last_tick) / interval)
        if not back and due <= 0:
            return  # no tick due: the usual answer, on every input
        leading = self.raw.role() == LEADER
        if back:
            # The clock went backwards (a clock fault). How much real time passed is unknown, so a
            # leader gives up its lease: an election timeout of ticks is spent at once (this is the
            # drift bound the lease-no-drift-bound bug drops; with it, a leader whose clock went back
            # keeps serving from its lease). A follower spends nothing: its clock reading less only
            # makes it wait longer before it campaigns or grants a vote, which no lease can be hurt
            # by, while spending a timeout would make every node whose clock went back (a fault on
            # all of them, a strobe) campaign at the same instant, splitting the vote, time after time.
            if self._last_tick - now > 0.5:
                given_up = ": lease given up" if leading else ""
                self.log(f"clock went back {self._last_tick - now:.3f} s{given_up}")
            if leading:
                for _ in range(self.cfg.election_tick):
                    self.raw.tick()
            self._last_tick = now
            # The tick timer was set by the clock before the step: it would fire the size of the
            # step late, and until then the node would tick only when some input came in.
            self._restart_ticker()
            self.schedule_ready()
            return
        cap = self.cfg.election_tick if leading else max(1, self.cfg.election_tick // 4)
        for _ in range(min(due, cap)):
            self.raw.tick()
        self._last_tick = now if due > cap else self._last_tick + due * interval
        self.schedule_ready()

    def tick(self) -> None:
        self.catch_up_ticks(from_timer=True)
        r = self.read_round
        if r is not None and not 0 <= self.clock.monotonic() - r.started <= self.election_timeout_s():
            # the round was dropped (no leader, leader changed): its reads join a fresh round. A
            # negative age is a clock that went back past the round's start: how long the round has
            # waited is unknown, and waiting for the clock to catch up held every read on this node
            # for the size of the step; a fresh round costs one more heartbeat and is always safe.
            self.read_queue = r.waiters + self.read_queue
            self.read_round = None
        if self.read_round is None and self.read_queue:
            self.read_queue = [f for f in self.read_queue if not f.done()]  # drop timed-out reads
            if self.read_queue and self.leader() is not None:
                self._start_read_round()

    def election_timeout_s(self) -> float:
        return self.cfg.election_tick * self.cfg.tick_ms / 1000

    # ---- the Ready loop -----------------------------------------------------------------------------

    def schedule_ready(self) -> None:
        if not self._ready_scheduled:
            self._ready_scheduled = True
            (self._loop or asyncio.get_running_loop()).call_soon(self.process_ready)

    def process_ready(self) -> None:
        """Fail-stop: an error while persisting or applying leaves the node in an unknown state, so it
        logs the traceback and exits at once (like etcd's panic) rather than serve or vote from it."""
        try:
            self._process_ready()
        except Exception:
            self.log(f"FATAL: error in the Ready loop, exiting:\n{traceback.format_exc()}")
            print(f"cluster.node {self.cfg.id}: FATAL error in the Ready loop; see {self.cfg.log_file}",
                  file=sys.stderr)
            self.env.exit(70)

    def _process_ready(self) -> None:
        self._ready_scheduled = False
        while self.raw.has_ready():
            rd = self.raw.ready()
            self.readies += 1
            early = self._may_send_before_persist(rd)
            if early and self.transport is not None and rd.messages:
                self.transport.send(rd.messages)
            self._persist(rd)
            if not early and self.transport is not None and rd.messages:
                self.transport.send(rd.messages)
            if rd.snapshot is not None:
                self.state = MetadataState.restore(rd.snapshot.data)
                self.log(f"installed snapshot at index {rd.snapshot.index} term {rd.snapshot.term}")
            self._apply(rd.committed_entries)
            if rd.snapshot is not None or rd.committed_entries:
                self._release_reads()
            for rs in rd.read_states:
                self._on_read_state(rs.index, rs.context)
            self.raw.advance(rd)
        self._after_ready()

    def _may_send_before_persist(self, rd: Ready) -> bool:
        """A leader may replicate while it writes its own disk (Raft thesis 10.2.1).

        Safe here because the loop is single-threaded: no follower's acknowledgement can be stepped
        until this Ready's fsync has returned, so the leader never counts itself toward a commit
        before its own copy is durable. Only when no term or vote change is waiting to be persisted
        (those must be durable before any message of theirs leaves) and no snapshot is involved.
        """
        if rd.snapshot is not None or self.raw.role() != LEADER:
            return False
        if rd.hard_state is None:
            return True
        durable = self.storage.hard_state()
        return rd.hard_state.term == durable.term and rd.hard_state.vote == durable.vote

    def _persist(self, rd: Ready) -> None:
        """Step 1 of the Ready contract: durable before anything is sent or applied."""
        if rd.snapshot is not None:
            snapshots.save(self.env.disk, self.cfg.data_dir, self.cfg.cluster_id, rd.snapshot,
                           fsync=self.cfg.fsync)
            hs = rd.hard_state or self.storage.hard_state()
            # the commit index recorded with the bare snapshot may not point past it (the entries
            # after it are written next); a lower durable commit is always safe
            hs = HardState(term=hs.term, vote=hs.vote, commit=min(hs.commit, rd.snapshot.index))
            self.wal.rewrite(rd.snapshot.index, rd.snapshot.term, hs, [])
            self.storage.apply_snapshot(rd.snapshot)
        if rd.entries:
            self._log_overwrite(rd.entries[0])
        if rd.entries or rd.hard_state is not None:
            durable = rd.entries
            if self.cfg.bugs.volatile_offsets:
                # offsets live in memory only; the WAL gets an empty entry instead
                durable = tuple(Entry(term=e.term, index=e.index, data=None)
                                if e.data is not None and e.data.get("op") == "commit_offset" else e
                                for e in rd.entries)
            self.wal.save(rd.hard_state, durable, sync=rd.must_sync or bool(rd.entries))
        if rd.entries:
            self.storage.append(rd.entries)
        if rd.hard_state is not None:
            self.storage.set_hard_state(rd.hard_state)

    def _log_overwrite(self, first: Entry) -> None:
        """Says when a leader's entries replace a tail of this node's log: entries it had appended
        and never saw committed, which WAL recovery must drop (the recovery-duplicates bug keeps
        them). How often faults leave such a tail decides whether that bug can show."""
        st = self.storage
        if st.first_index() <= first.index <= st.last_index() and st.term(first.index) != first.term:
            self.log(f"log: {st.last_index() - first.index + 1} entries from index {first.index} "
                     f"(term {st.term(first.index)}) replaced by term {first.term}'s")

    def _apply(self, entries: tuple[Entry, ...]) -> None:
        for e in entries:
            if e.index <= self.state.applied_index:
                continue  # covered by a snapshot installed in the same Ready
            result = self.state.apply(e.index, e.term, e.data)
            self.applied_entries += 1
            if e.data is not None:
                fut = self.pending.pop(str(e.data.get("rid")), None)
                if fut is not None and not fut.done():
                    fut.set_result(result)

    def _release_reads(self) -> None:
        """Serves the reads whose read index the state machine has now reached."""
        applied = self.state.applied_index
        still = []
        for idx, fut in self.read_waiting:
            if fut.done():
                continue
            if idx <= applied:
                fut.set_result(idx)
            else:
                still.append((idx, fut))
        self.read_waiting = still

    def _on_read_state(self, index: int, context: str) -> None:
        r = self.read_round
        if r is None or r.context != context:
            return
        self.read_round = None
        applied = self.state.applied_index
        for fut in r.waiters:
            if fut.done():
                continue
            if index <= applied:
                fut.set_result(index)
            else:
                self.read_waiting.append((index, fut))
        if self.read_queue:
            self._start_read_round()

    def _after_ready(self) -> None:
        raw = self.raw
        role, term, leader = raw.role(), raw.term(), raw.leader()
        seen = (role, term, leader)
        if seen != self._last_seen:
            prev = self._last_seen
            self._last_seen = seen
            was = f"{prev[0]} term {prev[1]}" if prev else "start"
            self.log(f"role {role} term {term} leader {leader} (was {was})")
        if role == LEADER and self._announced_term != term:
            # partition leadership and ISR follow the Raft leader: announce through the log
            self._announced_term = term
            alive = [p for p, up in (self.transport.connected() if self.transport else {}).items() if up]
            cmd = {"op": "leader_change", "leader": self.cfg.id, "term": term,
                   "brokers": sorted(self.cfg.peers), "alive": sorted([*alive, self.cfg.id])}
            try:
                self.propose(cmd)
            except ProposalDropped as e:
                self.log(f"could not announce leadership: {e}")
        self._maybe_snapshot()

    def _maybe_snapshot(self) -> None:
        applied = self.state.applied_index
        snap_index = self.storage.snapshot().index
        if applied - snap_index < self.cfg.snapshot_entries:
            return
        t0 = self.clock.monotonic()
        snap = self.storage.create_snapshot(applied, list(self.cfg.peers), self.state.snapshot())
        snapshots.save(self.env.disk, self.cfg.data_dir, self.cfg.cluster_id, snap, fsync=self.cfg.fsync)
        last = self.storage.last_index()
        tail = self.storage.entries(applied + 1, last + 1) if last > applied else []
        self.wal.rewrite(snap.index, snap.term, self.storage.hard_state(), tail)
        compact_to = applied - self.cfg.retain_entries
        if compact_to >= self.storage.first_index():
            self.storage.compact(compact_to)
        self.log(
            f"snapshot at index {snap.index} term {snap.term}; WAL rewritten with {len(tail)} entries, "
            f"log compacted to {self.storage.first_index()} in {1000 * (self.clock.monotonic() - t0):.1f} ms"
        )

    # ---- status -------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What the node is (role, term, indexes, transport), as of now.

        A status request over the wire is an input like any other: the ticks due are given first, so
        a cluster whose clocks all stepped back, with no client traffic, is woken by the controller
        asking who leads (its tick timers, set before the step, would otherwise hold it still for
        the size of the step). The simulator's observer asks the same way (a direct call: the work
        that follows is scheduled on the node's own loop). Before the node runs, it only reads.
        """
        if self._ticking:
            self.catch_up_ticks()
        st = self.raw.status()
        out = {
            "id": self.cfg.id,
            "role": st["role"],
            "term": st["term"],
            "leader": st.get("leader"),
            "commit": st.get("commit"),
            "applied": self.state.applied_index,
            "last_index": st.get("last_index"),
            "snapshot_index": self.storage.snapshot().index,
            "read_mode": self.cfg.read_mode,
            "bugs": list(self.cfg.bugs.names()),
            "cluster_id": self.cfg.cluster_id,
            "pid": self.env.pid,
            "uptime_s": round(self.clock.wall() - self.started_at, 3),
            "pending_proposals": len(self.pending),
            "wal_syncs": self.wal.syncs,
            "readies": self.readies,
        }
        if "progress" in st:
            out["progress"] = st["progress"]
        if self.transport is not None:
            out["transport"] = describe_stats(self.transport)
        return out

    def whoami(self) -> dict[str, Any]:
        """The node / role / term / leader every answer carries (cheap: called per answer)."""
        raw = self.raw
        return {"node": self.cfg.id, "role": raw.role(), "term": raw.term(), "leader": raw.leader()}

    def leader(self) -> str | None:
        return self.raw.leader()

    # ---- running ------------------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        self.transport = Transport(
            self.cfg.id,
            self.cfg.cluster_id,
            self.cfg.peers,
            on_message=self.on_peer_message,
            on_unreachable=self.on_unreachable,
            on_snapshot_status=self.on_snapshot_status,
            log=self.log,
            net=self.env.net,
            seed=int.from_bytes(self.env.entropy(8), "big"),
            listen_host=self.cfg.peer_listen_host,
            bugs=self.cfg.bugs,
        )
        client_host = self.cfg.client_host or self.cfg.peers[self.cfg.id][0]
        server = ClientServer(self, client_host, self.cfg.client_port)
        try:
            await self.transport.start()
            await server.start()
        except OSError as e:
            raise StartupError(f"cannot listen: {e}") from None
        self.log(
            f"listening: peers on {self.cfg.peers[self.cfg.id][0]}:{self.cfg.peers[self.cfg.id][1]}, "
            f"clients on {server.host}:{server.port}"
        )
        self._last_tick = self.clock.monotonic()  # recovery time is not election time
        self._ticking = True
        self._restart_ticker()
        try:
            await self.stopping.wait()
        finally:
            self.log("stopping")
            self._ticking = False
            self._restart_ticker()  # stops it
            await server.stop()
            await self.transport.stop()
            self.wal.close()

    def _restart_ticker(self) -> None:
        """Starts the tick timer afresh from the clock's current reading (stops it if the node is
        stopping), so a timer set before the clock stepped back does not hold up the next tick."""
        if self._ticker is not None:
            self._ticker.cancel()
        self._ticker = self._loop.create_task(self._tick_forever()) if self._ticking and self._loop else None

    async def _tick_forever(self) -> None:
        interval = self.cfg.tick_ms / 1000
        while True:
            await asyncio.sleep(max(0.0, self._last_tick + interval - self.clock.monotonic()))
            self.tick()


def build_parser() -> argparse.ArgumentParser:
    bugs = "\n".join(f"  {b.name:22} {b.description}\n  {'':22} post-mortem: {b.post_mortem}" for b in BUGS)
    p = argparse.ArgumentParser(prog="python3 -m cluster.node", description="A Raft metadata node.",
                                allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=f"known bugs (--bug NAME, repeatable, all off by default):\n{bugs}")
    p.add_argument("--id", required=True, help="this node's id; must appear in --peers")
    p.add_argument("--peers", required=True, help="every node: id=host:port,... (peer addresses)")
    p.add_argument("--data-dir", required=True, help="WAL, snapshots and the default log live here")
    p.add_argument("--client-port", type=int, required=True, help="TCP port of the client API")
    p.add_argument("--client-host", default=None, help="address of the client API (default: the peer host)")
    p.add_argument("--peer-listen-host", default=None, help="bind the peer port here (default: peer host)")
    p.add_argument("--read-mode", choices=READ_MODES, default="read-index")
    p.add_argument("--bug", action="append", default=[], choices=NAMES, metavar="NAME",
                   help="reproduce a known bug (repeatable; listed below)")
    p.add_argument("--log-file", default="", help="default: <data-dir>/node.log")
    p.add_argument("--cluster-id", default="", help="default: derived from --peers")
    p.add_argument("--tick-ms", type=int, default=50)
    p.add_argument("--election-tick", type=int, default=10)
    p.add_argument("--heartbeat-tick", type=int, default=1)
    p.add_argument("--snapshot-entries", type=int, default=10_000, help="snapshot every N applied entries")
    p.add_argument("--retain-entries", type=int, default=1_000, help="entries kept in memory after one")
    p.add_argument("--request-timeout", type=float, default=5.0, help="default server-side deadline (s)")
    p.add_argument("--seed", type=int, default=None, help="seed of the election-timeout RNG")
    p.add_argument("--no-fsync", action="store_true", help="UNSAFE: skip fsync (benchmarks only)")
    return p


def config_from_args(argv: list[str] | None = None) -> NodeConfig:
    args = build_parser().parse_args(argv)
    peers = parse_peers(args.peers)
    if args.id not in peers:
        raise StartupError(f"--id {args.id!r} is not one of --peers ({', '.join(peers)})")
    if not 0 < args.client_port < 65536:
        raise StartupError(f"--client-port {args.client_port} is not a TCP port")
    if args.tick_ms <= 0 or args.heartbeat_tick <= 0 or args.election_tick <= args.heartbeat_tick:
        raise StartupError("--tick-ms, --heartbeat-tick must be > 0 and --election-tick > --heartbeat-tick")
    if args.snapshot_entries <= 0 or args.retain_entries < 0:
        raise StartupError("--snapshot-entries must be > 0 and --retain-entries >= 0")
    return NodeConfig(
        id=args.id,
        peers=peers,
        data_dir=args.data_dir,
        client_port=args.client_port,
        client_host=args.client_host,
        peer_listen_host=args.peer_listen_host,
        read_mode=args.read_mode,
        bugs=Bugs.parse(args.bug),
        tick_ms=args.tick_ms,
        election_tick=args.election_tick,
        heartbeat_tick=args.heartbeat_tick,
        snapshot_entries=args.snapshot_entries,
        retain_entries=args.retain_entries,
        fsync=not args.no_fsync,
        cluster_id=args.cluster_id,
        log_file=args.log_file,
        request_timeout=args.request_timeout,
        seed=args.seed,
    )


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 clean stop, 2 refused to start (bad flags, foreign or corrupt data dir)."""
    log: NodeLog | None = None
    try:
        cfg = config_from_args(argv)
        env = real_env()
        log = NodeLog(cfg.log_file, cfg.id, env)
        node = Node(cfg, log, env=env)
        asyncio.run(node.run())
        return 0
    except StartupError as e:
        print(f"cluster.node: refusing to start: {e}", file=sys.stderr)
        if log is not None:
            log(f"refusing to start: {e}")
        return 2
    except OSError as e:
        print(f"cluster.node: {e}", file=sys.stderr)
        return 2
    finally:
        if log is not None:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
