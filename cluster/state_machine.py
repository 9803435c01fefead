"""The metadata state machine: the single source of truth that every node applies from the Raft log.

Topics, partition assignments, partition leaders and ISR, brokers, consumer groups and committed
offsets, and the transactional keyspace (lists and registers a "txn" command reads and writes as
one entry, as Kafka's transactional offset commit lands whole or not at all) all live here and
change only by applying committed log entries, in index order, the same way on every node. `apply`
is total and deterministic: a malformed command yields an error result (the same on every node),
never an exception, so one bad entry can never make replicas diverge or crash.
"""

from __future__ import annotations

import copy
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
GROUP_NAME = re.compile(r"^[^\x00-\x1f]{1,249}$")
MAX_PARTITIONS = 10_000
MAX_OFFSET = 2**63 - 1
# Micro-ops in one transaction, and elements one list may hold: far beyond Elle's workloads, small
# enough that one entry stays well under the frame limit.
MAX_TXN_MOPS = 1_000
MAX_LIST = 100_000
TXN_KEY = re.compile(r"^[^\x00-\x1f]{1,249}$")
TXN_FS = ("r", "append", "w")


class CommandError(Exception):
    """A command that cannot apply; `code` is the client-visible error (already_exists, invalid, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _int_in(cmd: dict[str, Any], key: str, lo: int, hi: int) -> int:
    v = cmd.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise CommandError("invalid", f"{key} must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def _name(cmd: dict[str, Any], key: str, pattern: re.Pattern[str]) -> str:
    v = cmd.get(key)
    if not isinstance(v, str) or not pattern.match(v):
        raise CommandError("invalid", f"{key} must be a name matching {pattern.pattern}, got {v!r}")
    return v


def validate(cmd: dict[str, Any]) -> None:
    """Raises CommandError when `cmd` is malformed, whatever the state: the server calls it before
    proposing so that garbage never reaches the log, and apply calls it again to stay total."""
    op = cmd.get("op")
    if op == "create_topic":
        _name(cmd, "name", TOPIC_NAME)
        _int_in(cmd, "partitions", 1, MAX_PARTITIONS)
        _int_in(cmd, "rf", 1, 64)
    elif op == "commit_offset":
        _name(cmd, "group", GROUP_NAME)
        _name(cmd, "topic", TOPIC_NAME)
        _int_in(cmd, "partition", 0, MAX_PARTITIONS - 1)
        _int_in(cmd, "offset", -1, MAX_OFFSET)
    elif op == "leader_change":
        if not isinstance(cmd.get("leader"), str):
            raise CommandError("invalid", "leader_change needs a leader id")
        _int_in(cmd, "term", 0, 2**63)
        for key in ("brokers", "alive"):
            v = cmd.get(key)
            if not isinstance(v, list) or not all(isinstance(b, str) for b in v):
                raise CommandError("invalid", f"leader_change needs {key} as a list of node ids")
    elif op == "txn":
        _validate_txn(cmd)
    elif op == "noop":
        pass
    else:
        raise CommandError("unknown_op", f"unknown command {op!r}")


def _validate_txn(cmd: dict[str, Any]) -> None:
    """A transaction's micro-ops: [f, key, value] with f r / append / w, a key a name or a whole
    number, a written value a whole number (reads carry None)."""
    mops = cmd.get("mops")
    if not isinstance(mops, list) or not 1 <= len(mops) <= MAX_TXN_MOPS:
        raise CommandError("invalid", f"mops must be a list of 1..{MAX_TXN_MOPS} micro-ops")
    for m in mops:
        if not isinstance(m, list) or len(m) != 3 or m[0] not in TXN_FS:
            raise CommandError("invalid", f"a micro-op is [f, key, value] with f one of "
                               f"{', '.join(TXN_FS)}, got {str(m)[:80]}")
        f, k, v = m
        named = isinstance(k, str) and TXN_KEY.match(k) is not None
        numbered = isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= MAX_OFFSET
        if not (named or numbered):
            raise CommandError("invalid", f"a micro-op's key is a name or a whole number, got {k!r}")
        if f != "r" and (not isinstance(v, int) or isinstance(v, bool) or not -MAX_OFFSET <= v <= MAX_OFFSET):
            raise CommandError("invalid", f"a written value is a whole number, got {str(v)[:40]}")


def txn_key(k: str | int) -> str:
    """Where key `k` lives in the keyspace: its text (so 1 and "1" name one key)."""
    return str(k)


def round_robin_leader(state: MetadataState, topic: str, partition: int, nodes: list[str]) -> str | None:
    """The first replica of a partition, as Chronik's v2.2 assigned partition leaders: the topic's
    own replica list when it exists, else round-robin over the nodes from the partition number
    (offset by the topic name, so topics spread like separately created ones). Only the
    leader-on-follower bug asks; the correct build's partition leader is the Raft leader."""
    t = state.topics.get(topic)
    if t is not None and partition < len(t.partitions) and t.partitions[partition].replicas:
        return t.partitions[partition].replicas[0]
    if not nodes:
        return None
    return nodes[(zlib.crc32(topic.encode()) + partition) % len(nodes)]


@dataclass
class Partition:
    """One partition's placement. Its leader is the Raft leader (see MetadataState.partition_leader)."""

    replicas: list[str]
    leader: str | None = None
    leader_epoch: int = 0
    isr: list[str] = field(default_factory=list)


@dataclass
class Topic:
    name: str
    rf: int
    partitions: list[Partition]
    created_index: int


@dataclass
class MetadataState:
    """Everything the metadata service knows; changed only through `apply`."""

    applied_index: int = 0
    applied_term: int = 0
    brokers: list[str] = field(default_factory=list)
    alive: list[str] = field(default_factory=list)
    controller: str | None = None
    controller_term: int = 0
    topics: dict[str, Topic] = field(default_factory=dict)
    #: group -> "topic/partition" -> [offset, log index of the commit]
    offsets: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: the transactional keyspace: key -> a list (appended to) or a whole number (written)
    kv: dict[str, list[int] | int] = field(default_factory=dict)

    # ---- applying -------------------------------------------------------------------------------

    def apply(self, index: int, term: int, data: dict[str, Any] | None) -> dict[str, Any]:
        """Applies the committed entry at `index`; returns its result for the proposer.

        Entries must come in order with no gaps; an out-of-order index is a bug in the caller, so it
        raises (the node stops rather than diverge).
        """
        if index != self.applied_index + 1:
            raise RuntimeError(f"apply out of order: index {index} after {self.applied_index}")
        self.applied_index = index
        self.applied_term = term
        if data is None:
            return {"ok": True}
        try:
            validate(data)
            return getattr(self, "_apply_" + data["op"])(index, data)
        except CommandError as e:
            return {"ok": False, "error": e.code, "message": e.message}

    def _apply_noop(self, index: int, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _apply_leader_change(self, index: int, cmd: dict[str, Any]) -> dict[str, Any]:
        """A new Raft leader announces itself: partition leadership and ISR follow it."""
        if cmd["term"] < self.controller_term:
            return {"ok": False, "error": "stale", "message": "leader_change from an older term"}
        self.controller = cmd["leader"]
        self.controller_term = cmd["term"]
        self.brokers = sorted(set(self.brokers) | set(cmd["brokers"]))
        self.alive = sorted(set(cmd["alive"]) | {cmd["leader"]})
        for topic in self.topics.values():
            for p in topic.partitions:
                self._place(p)
        return {"ok": True}

    def _apply_create_topic(self, index: int, cmd: dict[str, Any]) -> dict[str, Any]:
        name = cmd["name"]
        if name in self.topics:
            return {"ok": False, "error": "already_exists", "message": f"topic {name!r} already exists"}
        rf = cmd["rf"]
        if self.brokers and rf > len(self.brokers):
            return {
                "ok": False,
                "error": "invalid_replication_factor",
                "message": f"rf {rf} exceeds the {len(self.brokers)} brokers",
            }
        brokers = self.brokers or ([self.controller] if self.controller else [])
        start = len(self.topics)
        partitions = []
        for i in range(cmd["partitions"]):
            replicas = [brokers[(start + i + r) % len(brokers)] for r in range(rf)] if brokers else []
            p = Partition(replicas=replicas)
            self._place(p)
            partitions.append(p)
        self.topics[name] = Topic(name=name, rf=rf, partitions=partitions, created_index=index)
        return {"ok": True, "created": True, "topic": self.describe(name)}

    def _apply_commit_offset(self, index: int, cmd: dict[str, Any]) -> dict[str, Any]:
        topic = self.topics.get(cmd["topic"])
        if topic is not None and cmd["partition"] >= len(topic.partitions):
            return {
                "ok": False,
                "error": "invalid_partition",
                "message": f"topic {topic.name!r} has {len(topic.partitions)} partitions",
            }
        key = f"{cmd['topic']}/{cmd['partition']}"
        self.offsets.setdefault(cmd["group"], {})[key] = [cmd["offset"], index]
        return {"ok": True, "offset": cmd["offset"]}

    def _apply_txn(self, index: int, cmd: dict[str, Any]) -> dict[str, Any]:
        """Every micro-op in order against one overlay, then the overlay at once: reads see the state
        as of this entry plus the transaction's own earlier writes, and a micro-op that cannot apply
        (an append to a register, a list at its limit) leaves nothing of the transaction behind."""
        touched: dict[str, list[int] | int | None] = {}
        out: list[list[Any]] = []
        for f, k, v in cmd["mops"]:
            key = txn_key(k)
            cur = touched[key] if key in touched else self.kv.get(key)
            if f == "r":
                out.append([f, k, list(cur) if isinstance(cur, list) else cur])
                continue
            if f == "w":
                touched[key] = v
            elif cur is None or isinstance(cur, list):
                if cur is not None and len(cur) >= MAX_LIST:
                    return {"ok": False, "error": "invalid", "message": f"list {key!r} is full"}
                touched[key] = [*(cur or []), v]
            else:
                return {"ok": False, "error": "invalid",
                        "message": f"append to {key!r}, which holds a register value"}
            out.append([f, k, v])
        for key, val in touched.items():
            if val is not None:
                self.kv[key] = val
        return {"ok": True, "mops": out}

    def read_txn(self, mops: list[list[Any]]) -> list[list[Any]]:
        """A read-only transaction's answers from this state (its micro-ops validated, all reads)."""
        out: list[list[Any]] = []
        for _, k, _ in mops:
            cur = self.kv.get(txn_key(k))
            out.append(["r", k, list(cur) if isinstance(cur, list) else cur])
        return out

    def partition_leader(self, p: Partition) -> str | None:
        """Who leads a partition: the Raft leader, the only node whose writes need no forwarding.

        The leader-on-follower bug asks round_robin_leader instead.
        """
        return self.controller

    def _place(self, p: Partition) -> None:
        leader = self.partition_leader(p)
        if leader != p.leader:
            p.leader = leader
            p.leader_epoch += 1
        alive = set(self.alive)
        isr = [r for r in p.replicas if r in alive]
        if leader is not None and leader not in isr:
            isr.insert(0, leader)
        p.isr = isr

    # ---- reading ----------------------------------------------------------------------------------

    def describe(self, name: str) -> dict[str, Any] | None:
        topic = self.topics.get(name)
        if topic is None:
            return None
        return {
            "name": topic.name,
            "rf": topic.rf,
            "created_index": topic.created_index,
            "partitions": [
                {
                    "partition": i,
                    "leader": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "replicas": list(p.replicas),
                    "isr": list(p.isr),
                }
                for i, p in enumerate(topic.partitions)
            ],
        }

    def list_topics(self) -> list[str]:
        return sorted(self.topics)

    def fetch_offset(self, group: str, topic: str, partition: int) -> int | None:
        entry = self.offsets.get(group, {}).get(f"{topic}/{partition}")
        return None if entry is None else entry[0]

    def groups(self) -> list[str]:
        return sorted(self.offsets)

    # ---- snapshots --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able copy of the whole state (taken at applied_index)."""
        out: dict[str, Any] = {
            "applied_index": self.applied_index,
            "applied_term": self.applied_term,
            "brokers": list(self.brokers),
            "alive": list(self.alive),
            "controller": self.controller,
            "controller_term": self.controller_term,
            "topics": {
                name: {
                    "rf": t.rf,
                    "created_index": t.created_index,
                    "partitions": [
                        [p.replicas, p.leader, p.leader_epoch, p.isr] for p in t.partitions
                    ],
                }
                for name, t in self.topics.items()
            },
            "offsets": copy.deepcopy(self.offsets),
        }
        if self.kv:  # absent when unused, so a snapshot without transactions reads as before
            out["kv"] = copy.deepcopy(self.kv)
        return out

    @classmethod
    def restore(cls, data: dict[str, Any]) -> MetadataState:
        """The state a snapshot() describes."""
        topics = {
            name: Topic(
                name=name,
                rf=t["rf"],
                created_index=t["created_index"],
                partitions=[
                    Partition(replicas=list(r), leader=ldr, leader_epoch=ep, isr=list(isr))
                    for r, ldr, ep, isr in t["partitions"]
                ],
            )
            for name, t in data["topics"].items()
        }
        return cls(
            applied_index=data["applied_index"],
            applied_term=data["applied_term"],
            brokers=list(data["brokers"]),
            alive=list(data["alive"]),
            controller=data["controller"],
            controller_term=data["controller_term"],
            topics=topics,
            offsets=copy.deepcopy(data["offsets"]),
            kv=copy.deepcopy(data.get("kv", {})),
        )
