"""kafka: append-only logs by key, each message given an offset; consumers poll onward from their own
position and commit what they read (Jepsen's kafka workload, as Maelstrom runs it).

The client contract (what `DB.client("kafka")` returns):

  f                        key   invoke value         ok completion value
  send                     "k"   int message          the offset the message was given (int)
  poll                     None  {"k": offset, ...}   {"k": [[offset, message], ...], ...}: each key's
                                                      messages from that offset on, in offset order (a
                                                      key with none may be left out)
  commit_offsets           None  {"k": offset, ...}   anything (the keys' committed offsets advance to
                                                      these, never back)
  list_committed_offsets   None  ["k", ...]           {"k": committed offset, ...} (a key with none
                                                      left out)

Keys are "0".."key_count-1"; messages are increasing integers, each sent once. Offsets are whole
numbers, need not be dense, and must increase along each key's log. Any op may end fail (certainly
not done) or info (unknown).

Each worker process is a consumer: a fresh one lists the committed offsets and starts polling from
there (from 0 where none); every poll asks for each key from one past the last offset it read, and
a poll that returned messages is followed by a commit of the highest offset read per key; now and
then it lists the committed offsets again. After the quiet period (final_delay, default 1 s) every
worker polls on until it has read up to the highest offset known when the final polls began, or a
bound passes (final_poll_time seconds, default 10; a worker whose polls bring nothing new for
final_idle_polls polls in a row, default 20, stops). Checked by checkers.kafka (Jepsen's kafka
anomalies). Options: key_count (default 10), send_fraction (default 0.5), final_delay,
final_poll_time, final_idle_polls.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.kafka import FS, KafkaChecker, is_offset, offsets_map, poll_pairs
from jepsen_py.workloads.common import run_checkers

from jepsen_py.generator import PENDING, Context, Generator, Pending, Step, Template, seq, sleep
from jepsen_py.history import OK, Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

#: Keys live at once: the number Maelstrom's kafka workload (through Elle's generator) uses by default.
DEFAULT_KEY_COUNT = 10
FINAL_DELAY_S = 1.0
FINAL_POLL_TIME_S = 10.0
FINAL_IDLE_POLLS = 20
#: Of the ops that are neither sends nor commits: this many list the committed offsets.
LIST_FRACTION = 0.1


class KafkaState:
    """The consumers' positions and what is known of each key's log, shared by the main and final
    generators (one thread calls them; no locking)."""

    def __init__(self, key_count: int, send_fraction: float) -> None:
        self.keys = [str(i) for i in range(max(1, key_count))]
        self.send_fraction = send_fraction
        self.next_msg = 0
        self.positions: dict[Any, dict[str, int]] = {}  # process -> key -> next offset to poll
        self.starting: set[Any] = set()  # processes whose first list is in flight
        self.to_commit: dict[Any, dict[str, int]] = {}
        self.known: dict[str, int] = {}  # key -> highest offset known (ok sends and polls)

    def poll(self, process: Any, final: bool = False) -> Template:
        mine = self.positions.setdefault(process, {})
        return Template("poll", value={k: mine.get(k, 0) for k in self.keys},
                        meta={"final": True} if final else {})

    def op(self, ctx: Context) -> Step:
        p = ctx.process
        if p not in self.positions:
            if p in self.starting:
                return PENDING
            self.starting.add(p)
            return Template("list_committed_offsets", value=list(self.keys))
        commit = self.to_commit.pop(p, None)
        if commit:
            return Template("commit_offsets", value=commit)
        r = ctx.rng.random()
        if r < self.send_fraction:
            self.next_msg += 1
            return Template("send", key=ctx.rng.choice(self.keys), value=self.next_msg)
        if ctx.rng.random() < LIST_FRACTION:
            return Template("list_committed_offsets", value=list(self.keys))
        return self.poll(p)

    def update(self, invoke: Op, complete: Op) -> bool:
        """Learns from a completion; True when it was a poll that brought something new."""
        p = invoke.process
        if invoke.f == "list_committed_offsets" and p in self.starting:
            self.starting.discard(p)
            listed = offsets_map(complete.value) if complete.type == OK else {}
            self.positions[p] = {k: v + 1 for k, v in listed.items()}
            return False
        if complete.type != OK:
            return False
        if invoke.f == "send" and is_offset(complete.value):
            k = str(invoke.key)
            self.known[k] = max(self.known.get(k, -1), complete.value)
            return False
        if invoke.f != "poll":
            return False
        mine = self.positions.setdefault(p, {})
        new = False
        for k, prs in poll_pairs(complete.value).items():
            top = max(o for o, _ in prs)
            self.known[k] = max(self.known.get(k, -1), top)
            if top + 1 > mine.get(k, 0):
                mine[k] = top + 1
                self.to_commit.setdefault(p, {})[k] = top
                new = True
        return new


class KafkaOps(Generator):
    """The main phase: sends, polls, commits and lists, each consumer from its own position."""

    def __init__(self, state: KafkaState) -> None:
        self.state = state

    def op(self, ctx: Context) -> Step:
        return self.state.op(ctx)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.state.update(invoke, complete)


class FinalPolls(Generator):
    """Every worker polls until it has read each key up to the highest offset known when the final
    polls began (Jepsen's final polls), within the time and idle bounds."""

    def __init__(self, state: KafkaState, time_s: float, idle_polls: int) -> None:
        self.state = state
        self.time_s = time_s
        self.idle_polls = idle_polls
        self.target: dict[str, int] | None = None
        self.deadline = 0.0
        self.idle: dict[Any, int] = {}  # thread -> polls in a row that brought nothing new
        self.paced: dict[Any, float] = {}  # thread -> when it may poll again after an idle poll
        self.done: set[Any] = set()

    def op(self, ctx: Context) -> Step:
        s = self.state
        if self.target is None:
            self.target = dict(s.known)
            self.deadline = ctx.time + self.time_s
        if ctx.time >= self.deadline or set(ctx.client_threads) <= self.done:
            return None
        if ctx.thread in self.done:
            return PENDING
        p = ctx.process
        s.to_commit.pop(p, None)
        s.starting.discard(p)
        mine = s.positions.setdefault(p, {})  # a fresh consumer reads from the beginning
        if all(mine.get(k, 0) > top for k, top in self.target.items()) or \
                self.idle.get(ctx.thread, 0) >= self.idle_polls:
            self.done.add(ctx.thread)
            return None if set(ctx.client_threads) <= self.done else PENDING
        if self.paced.get(ctx.thread, 0.0) > ctx.time:
            return Pending(self.paced[ctx.thread])
        return s.poll(p, final=True)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        new = self.state.update(invoke, complete)
        if invoke.f != "poll":
            return
        t = ctx.thread
        self.idle[t] = 0 if new else self.idle.get(t, 0) + 1
        self.paced[t] = ctx.time + (0.0 if new else 0.05)  # nothing new: wait a little


def kafka_workload(spec: TestSpec, *, name: str = "kafka", meta: dict[str, Any] | None = None) -> Workload:
    o = spec.options
    state = KafkaState(key_count=int(o.get("key_count", DEFAULT_KEY_COUNT)),
                       send_fraction=float(o.get("send_fraction", 0.5)))
    final = FinalPolls(state, time_s=float(o.get("final_poll_time", FINAL_POLL_TIME_S)),
                       idle_polls=int(o.get("final_idle_polls", FINAL_IDLE_POLLS)))
    return Workload(
        name=name,
        fs=FS,
        generator=KafkaOps(state),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))), final),
        checkers=[KafkaChecker(), *run_checkers(spec)],
        meta={"model": "kafka", "key_count": len(state.keys), **(meta or {})},
    )
