"""The controller as the network, as Maelstrom's is: every message between nodes n1..nN and clients
c0, c1, ... goes through here, so we can delay it, drop it across a partition and count it.

Node output arrives in batches on each node's reader thread; a message due now is handed straight to
its destination's writer queue, a delayed one waits in a heap that one delivery thread drains (no
thread per message). Clients live in this process: `call` sends a request and waits for the reply
with the matching in_reply_to. A node that breaks the protocol (garbage on stdout, a reply to a
request nobody made, a message to nobody) is recorded as a `Problem`, one line naming it.
Maelstrom's services (services.py: lin-kv, seq-kv, lww-kv, lin-tso) are nodes of this network
too: a node's request to one is answered by it, request and reply delayed and counted (as
servers) like any message; partitions cut only the test's nodes, as Maelstrom's do.
"""

from __future__ import annotations

import heapq
import itertools
import random
import re
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from jepsen_py.errors import BadInput
from jepsen_py.maelstrom.journal import MessageJournal
from jepsen_py.maelstrom.latency import Latency
from jepsen_py.maelstrom.process import Batch, Exit, NodeProcess, Problem
from jepsen_py.maelstrom.protocol import ErrorCode, Message, encode, error_code, quote
from jepsen_py.maelstrom.services import start_services

if TYPE_CHECKING:
    from jepsen_py.protocols import Test

#: The client that sends every node its init, as Maelstrom's does.
INIT_CLIENT = "c0"
_CLIENT = re.compile(r"c[0-9]+")


class NodeFailed(BadInput):
    """A node did not come up as the protocol says (no init_ok): the user's binary needs fixing."""


@dataclass(slots=True)
class Counts:
    """Messages of one kind: sent into the network, delivered (handed to a live node or a client),
    dropped by a partition, lost (their destination's process was not running)."""

    sent: int = 0
    delivered: int = 0
    dropped: int = 0
    lost: int = 0

    def to_dict(self, ops: int | None = None) -> dict[str, float]:
        out: dict[str, float] = {"sent": self.sent, "delivered": self.delivered, "dropped": self.dropped,
                                 "lost": self.lost}
        if ops:
            out["msgs_per_op"] = self.sent / ops
        return out


@dataclass(slots=True)
class NetStats:
    """Maelstrom's net stats: all messages, those with a client at either end, those between
    servers; msgs-per-op is sent / the test's op count, the figure Maelstrom reports."""

    all: Counts = field(default_factory=Counts)
    clients: Counts = field(default_factory=Counts)
    servers: Counts = field(default_factory=Counts)

    def to_dict(self, ops: int | None = None) -> dict[str, dict[str, float]]:
        return {"all": self.all.to_dict(ops), "clients": self.clients.to_dict(ops),
                "servers": self.servers.to_dict(ops)}


@dataclass(frozen=True, slots=True)
class RpcResult:
    """A client call's outcome. ok: `body` is the reply; error: the node answered with an error body
    (`error` says its code and whether it is definite); timeout: no reply in time (indefinite)."""

    outcome: Literal["ok", "error", "timeout"]
    body: dict[str, Any] | None
    error: ErrorCode | None = None
    text: str = ""

    @property
    def definite(self) -> bool:
        """True when the op certainly did not happen: a definite error only."""
        return self.outcome == "error" and self.error is not None and self.error.definite


class _Pending:
    __slots__ = ("event", "gone", "node", "reply")

    def __init__(self, node: str) -> None:
        self.node = node
        self.event = threading.Event()
        self.reply: Message | None = None
        self.gone = False  # woken because its node's process ended or took nothing: no reply will come


def node_names(count: int) -> list[str]:
    return [f"n{i}" for i in range(1, count + 1)]


class Router:
    """The network of one test: starts `len(nodes)` processes of `argv`, each node's stderr in
    `log_dir/<node>.log`, and routes every message. `start` runs the init handshake."""

    def __init__(self, argv: Sequence[str], nodes: Sequence[str] | int, log_dir: Path, *,
                 latency: Latency = Latency(), seed: int = 0, cwd: str | Path | None = None,
                 env: Mapping[str, str] | None = None, journal: MessageJournal | None = None) -> None:
        self.nodes = node_names(nodes) if isinstance(nodes, int) else list(nodes)
        if not self.nodes or len(set(self.nodes)) != len(self.nodes):
            raise ValueError(f"nodes {self.nodes}: at least one, each named once")
        self.latency = latency
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self.log_dir = Path(log_dir)
        self.processes: dict[str, NodeProcess] = {
            n: NodeProcess(n, argv, self.log_dir / f"{n}.log", cwd=cwd, env=env,
                           on_messages=lambda batch, n=n: self._from_node(n, batch),
                           on_problem=self._problem, on_exit=self._exited)
            for n in self.nodes}
        self.services = start_services(seed)  # Maelstrom's services: nodes of this network too
        self._services_lock = threading.Lock()
        self._servers = frozenset(self.processes) | frozenset(self.services)
        self.problems: list[Problem] = []
        self.exits: list[Exit] = []
        self.late_replies = 0  # replies to calls that had already timed out or been answered
        self._lock = threading.Lock()  # problems, exits, stats, clients, pending
        self._stats = NetStats()
        self.journal = journal  # when given, every message's send and landing (up to its limit)
        self._grudge: dict[str, frozenset[str]] = {}  # replaced whole, read without the lock
        self._ids = itertools.count(1)
        self._pending: dict[tuple[str, int], _Pending] = {}
        self._issued: dict[str, set[int]] = {}  # client -> every msg_id it sent
        self._heap: list[tuple[float, int, str, Message, bytes]] = []
        self._seq = itertools.count()
        self._heap_cond = threading.Condition()
        self._closed = False
        self._delivery = threading.Thread(target=self._deliver_loop, name="maelstrom-delivery", daemon=True)

    # -- life --------------------------------------------------------------------------------------

    def start(self, init_timeout: float = 5.0) -> None:
        """Starts every node and sends each its init; NodeFailed (everything stopped again) naming
        the first node that gave no init_ok within `init_timeout` seconds."""
        marks = self._marks()  # before any process runs: one that dies at once is seen dying
        self._delivery.start()
        try:
            for n, p in self.processes.items():
                try:
                    p.start()
                except OSError as e:
                    raise NodeFailed(f"node {n} could not be started ({p.argv[0]}): "
                                     f"{e.strerror or e}") from None
            self.init(self.nodes, init_timeout, marks)
        except BaseException:
            self.close()
            raise

    def init(self, nodes: Sequence[str], timeout: float, since: tuple[int, int] | None = None) -> None:
        """The init handshake with `nodes` at once (a restarted node needs it again); only what
        happened after `since` (problems, exits: `_marks()`) counts against a node."""
        deadline = time.monotonic() + timeout
        since = since if since is not None else self._marks()
        waits = {n: self._request(INIT_CLIENT, n, {"type": "init", "node_id": n, "node_ids": self.nodes})
                 for n in nodes}
        failures = []
        for n, (msg_id, pending) in waits.items():
            reply = self._await_init(n, pending, deadline, since)
            self._forget(INIT_CLIENT, msg_id)
            failure = self._init_failure(n, reply, timeout, since)
            if failure:
                failures.append(failure)
        if failures:
            more = f" (and {len(failures) - 1} more node(s) failed)" if len(failures) > 1 else ""
            raise NodeFailed(failures[0] + more)

    def _marks(self) -> tuple[int, int]:
        with self._lock:
            return len(self.problems), len(self.exits)

    def _await_init(self, node: str, pending: _Pending, deadline: float,
                    since: tuple[int, int]) -> Message | None:
        while not pending.event.wait(0.02):
            if time.monotonic() >= deadline or self._exit_since(node, since) is not None:
                return None
        return pending.reply

    def _exit_since(self, node: str, since: tuple[int, int]) -> Exit | None:
        with self._lock:
            return next((e for e in self.exits[since[1]:] if e.node == node and not e.expected), None)

    def _init_failure(self, node: str, reply: Message | None, timeout: float,
                      since: tuple[int, int]) -> str | None:
        if reply is not None:
            body = reply.body
            if body["type"] == "init_ok":
                return None
            if body["type"] == "error":
                code = error_code(_int(body.get("code"), -1))
                return (f"node {node} answered init with error {code.code} ({code.name}): "
                        f"{quote(str(body.get('text', '')))}")
            return f"node {node} answered init with a {body['type']!r} message, not init_ok"
        exit_ = self._exit_since(node, since)
        if exit_ is not None:
            return exit_.describe("before answering init")
        with self._lock:
            printed = [p.text for p in self.problems[since[0]:] if p.node == node]
        said = f"; it {printed[0]}" if printed else "; it printed nothing on stdout"
        tail = self.processes[node].stderr_tail(2)
        stderr = f"; its last stderr: {' | '.join(tail)}" if tail else ""
        return f"node {node} did not answer init within {timeout:g} s{said}{stderr}"

    def close(self) -> None:
        """Stops every node (EOF, then SIGKILL after a grace) and the delivery thread; calls still
        waiting return a timeout. Safe to call twice."""
        for p in self.processes.values():
            p.close_input()
        deadline = time.monotonic() + 1.0  # one grace for all: they exit on EOF together
        for p in self.processes.values():
            p.stop(grace=max(0.0, deadline - time.monotonic()))
        with self._heap_cond:
            self._closed = True
            self._heap.clear()
            self._heap_cond.notify()
        if self._delivery.is_alive():
            self._delivery.join()
        with self._lock:
            waiting = list(self._pending.values())
        for pending in waiting:
            pending.event.set()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- faults --------------------------------------------------------------------------------------

    def partition(self, grudge: Mapping[str, Collection[str]]) -> None:
        """Each dest in `grudge` stops hearing from the srcs it names, on top of any cut in force.
        Messages across a cut are dropped, counted, never delivered later (Maelstrom's partitions)."""
        merged = dict(self._grudge)
        for dest, srcs in grudge.items():
            merged[dest] = merged.get(dest, frozenset()) | frozenset(srcs)
        self._grudge = merged

    def heal(self) -> None:
        self._grudge = {}

    def grudge(self) -> dict[str, frozenset[str]]:
        return dict(self._grudge)

    def kill(self, node: str) -> None:
        self.processes[node].kill()

    def restart(self, node: str, init_timeout: float = 5.0) -> None:
        """Kills and starts the node again; it knows nothing, so it gets its init again."""
        marks = self._marks()
        self.processes[node].restart()
        self.init([node], init_timeout, marks)

    def pause(self, node: str) -> None:
        self.processes[node].pause()

    def resume(self, node: str) -> None:
        self.processes[node].resume()

    # -- clients -------------------------------------------------------------------------------------

    def call(self, client: str, node: str, body: Mapping[str, Any], timeout: float) -> RpcResult:
        """Client `client` sends `body` (a msg_id is assigned) to `node` and waits up to `timeout`
        seconds for the reply: ok, an error (code, text, definite or not) or a timeout."""
        if not _CLIENT.fullmatch(client):
            raise ValueError(f"client {client!r}: clients are named c0, c1, ...")
        msg_id, pending = self._request(client, node, body)
        try:
            pending.event.wait(timeout)
        finally:
            self._forget(client, msg_id)
        reply = pending.reply
        if reply is None:
            why = f"{node} was not running" if pending.gone else f"no reply from {node} within {timeout:g} s"
            return RpcResult("timeout", None, error_code(0), why)
        if reply.body["type"] == "error":
            code = error_code(_int(reply.body.get("code"), 13))
            return RpcResult("error", reply.body, code, str(reply.body.get("text", "")))
        return RpcResult("ok", reply.body)

    def _request(self, client: str, node: str, body: Mapping[str, Any]) -> tuple[int, _Pending]:
        if self._closed:
            raise RuntimeError("the router is closed: no more calls")
        if node not in self.processes:
            raise ValueError(f"node {node!r}: not one of {', '.join(self.nodes)}")
        if not isinstance(body.get("type"), str):
            raise ValueError(f"a request body needs a string type: {dict(body)}")
        msg_id = next(self._ids)
        pending = _Pending(node)
        with self._lock:
            self._pending[(client, msg_id)] = pending
            self._issued.setdefault(client, set()).add(msg_id)
        msg = Message(client, node, {**body, "msg_id": msg_id})
        self._route([(msg, encode(msg))], client)
        return msg_id, pending

    def _forget(self, client: str, msg_id: int) -> None:
        with self._lock:
            self._pending.pop((client, msg_id), None)

    def _to_client(self, msg: Message) -> None:
        reply_to = msg.in_reply_to
        with self._lock:
            if reply_to is None:
                problem = Problem(msg.src, f"sent client {msg.dest} a {msg.type!r} message that is not a "
                                  "reply (no in_reply_to)")
            elif (pending := self._pending.pop((msg.dest, reply_to), None)) is not None:
                pending.reply = msg
                pending.event.set()
                return
            elif reply_to in self._issued.get(msg.dest, ()):
                self.late_replies += 1  # it timed out or was answered already: normal on a slow network
                return
            else:
                problem = Problem(msg.src, f"replied to msg_id {reply_to} of client {msg.dest}, which "
                                  f"it never sent: {quote(encode(msg))}")
        self._problem(problem)

    # -- routing -------------------------------------------------------------------------------------

    def _problem(self, problem: Problem) -> None:
        with self._lock:
            self.problems.append(problem)

    def _exited(self, exit_: Exit) -> None:
        with self._lock:
            self.exits.append(exit_)
        self._give_up_on(exit_.node)  # its reader has handed on every line it printed

    def _give_up_on(self, node: str) -> None:
        """Wakes every call waiting on `node`, whose process ended or took nothing: a dead process
        answers nobody, so waiting out the timeout would only hold up the run. The op stays
        indefinite (a timeout) either way. The init handshake waits on its own (`_await_init`),
        until the node's exit is on record, so it can say how the node ended."""
        with self._lock:
            waiting = [p for (client, _), p in self._pending.items()
                       if p.node == node and p.reply is None and client != INIT_CLIENT]
        for pending in waiting:
            pending.gone = True
            pending.event.set()

    def crashes(self) -> list[Exit]:
        """Exits we did not cause: the node died on its own."""
        with self._lock:
            return [e for e in self.exits if not e.expected]

    def _known(self, dest: str) -> bool:
        return dest in self.processes or dest in self.services or dest in self._issued

    def _from_node(self, node: str, batch: Batch) -> None:
        good: Batch = []
        for msg, raw in batch:
            if msg.src != node:
                self._problem(Problem(node, f"sent a message with src {msg.src!r}, not its own id: "
                                      f"{quote(raw)}"))
            elif not self._known(msg.dest):
                self._problem(Problem(node, f"sent a message to {msg.dest!r}, which is no node and no "
                                      f"client: {quote(raw)}"))
            else:
                good.append((msg, raw))
        if good:
            self._route(good, node)

    def _route(self, batch: Batch, src: str) -> None:
        """Counts each message sent and delivers it now or, delayed, through the heap."""
        src_client = src not in self._servers
        clients = servers = 0
        for msg, _ in batch:
            if src_client or msg.dest not in self._servers:
                clients += 1
            else:
                servers += 1
        with self._lock:
            s = self._stats
            s.all.sent += clients + servers
            s.clients.sent += clients
            s.servers.sent += servers
        if self.journal is not None:
            self.journal.sent(batch, time.monotonic())
        if self.latency.mean_ms == 0:
            self._deliver(batch)
            return
        now = time.monotonic()
        with self._rng_lock:
            delays = [self.latency.sample(self._rng) for _ in batch]
        with self._heap_cond:
            if self._closed:
                return
            first = self._heap[0][0] if self._heap else None
            for (msg, raw), delay in zip(batch, delays, strict=True):
                heapq.heappush(self._heap, (now + delay, next(self._seq), msg.dest, msg, raw))
            if first is None or self._heap[0][0] < first:
                self._heap_cond.notify()

    def _deliver_loop(self) -> None:
        while True:
            with self._heap_cond:
                while not self._closed:
                    if not self._heap:
                        self._heap_cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._heap_cond.wait(wait)
                if self._closed:
                    return
                now = time.monotonic()
                due: Batch = []
                while self._heap and self._heap[0][0] <= now:
                    _, _, _, msg, raw = heapq.heappop(self._heap)
                    due.append((msg, raw))
            self._deliver(due)

    def _deliver(self, batch: Batch) -> None:
        """Hands each message to its destination, unless a cut drops it; batched per destination."""
        grudge = self._grudge
        took_nothing: list[str] = []  # destinations whose process was not running
        dropped: list[Message] = []  # cut by a partition
        out: dict[str, tuple[list[bytes], list[int]]] = {}  # dest -> lines, [from clients, from servers]
        to_clients: list[Message] = []
        to_services: list[Message] = []
        counts = {"clients": [0, 0, 0], "servers": [0, 0, 0]}  # delivered, dropped, lost
        procs = self.processes
        for msg, raw in batch:
            dest, src = msg.dest, msg.src
            to_server = dest in procs
            from_server = src in self._servers
            if grudge and src in grudge.get(dest, ()):
                counts["servers" if to_server and from_server else "clients"][1] += 1
                dropped.append(msg)
            elif to_server:
                lines, kinds = out.setdefault(dest, ([], [0, 0]))
                lines.append(raw)
                kinds[1 if from_server else 0] += 1
            elif dest in self.services:
                counts["servers" if from_server else "clients"][0] += 1
                to_services.append(msg)
            else:
                counts["clients"][0] += 1
                to_clients.append(msg)
        for dest, (lines, (from_clients, from_servers)) in out.items():
            slot = 0 if procs[dest].send(lines) else 2
            if slot:
                took_nothing.append(dest)
                self._give_up_on(dest)
            counts["clients"][slot] += from_clients
            counts["servers"][slot] += from_servers
        if self.journal is not None:
            self.journal.landed(batch, dropped, took_nothing, time.monotonic())
        with self._lock:
            s = self._stats
            for kind, (delivered, dropped, lost) in counts.items():
                c = s.clients if kind == "clients" else s.servers
                c.delivered += delivered
                c.dropped += dropped
                c.lost += lost
                s.all.delivered += delivered
                s.all.dropped += dropped
                s.all.lost += lost
        for msg in to_clients:
            self._to_client(msg)
        if to_services:
            self._serve(to_services)

    def _serve(self, requests: list[Message]) -> None:
        """Maelstrom's services answer the requests sent to them (in_reply_to: the request's msg_id);
        each reply goes back through the network, delayed, cut or counted like any message."""
        replies: dict[str, Batch] = {}
        with self._services_lock:
            for msg in requests:
                body = self.services[msg.dest].handle(msg.src, msg.body)
                if body is None:
                    continue  # a reply or an error sent to a service: not a request
                if msg.msg_id is not None:
                    body["in_reply_to"] = msg.msg_id
                reply = Message(msg.dest, msg.src, body)
                replies.setdefault(msg.dest, []).append((reply, encode(reply)))
        for service, batch in replies.items():
            self._route(batch, service)

    def stats(self) -> NetStats:
        """A copy of the counts so far."""
        with self._lock:
            s = self._stats
            return NetStats(Counts(*_fields(s.all)), Counts(*_fields(s.clients)), Counts(*_fields(s.servers)))


def _fields(c: Counts) -> tuple[int, int, int, int]:
    return c.sent, c.delivered, c.dropped, c.lost


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class MaelstromNet:
    """The `Net` seam (jepsen_py.protocols.Net) over a router: the partition nemeses cut and heal
    the router's links as they would iptables rules on real machines."""

    def __init__(self, router: Router) -> None:
        self.router = router

    def drop_all(self, test: Test, grudge: Mapping[str, Sequence[str]],
                 first: Collection[str] = ()) -> None:
        """Every cut at once: the router's grudge changes atomically, so `first` needs no order."""
        self.router.partition(grudge)

    def heal(self, test: Test) -> None:
        self.router.heal()

    def ready(self, test: Test) -> None:
        pass  # nothing to install ahead: a cut is one assignment

    def remove(self, test: Test) -> None:
        self.router.heal()
