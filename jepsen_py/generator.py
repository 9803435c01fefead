"""Generators: what operations a test performs, and when (Jepsen's jepsen.generator, in Python).

A generator hands out *op templates* to worker threads that ask for them. The runner turns each
template into an invoke Op for the asking worker's process, performs it, records the completion and
asks again. Generators compose, so a whole test schedule is one value built from small parts.

Op templates
    `Template(f, key=None, value=None, node=None, meta={})`, or simply a dict with the same keys:
    `{"f": "read", "key": "g1/t/0"}`. `node`, when set, sends the op to that node instead of the
    worker's own (used by final reads, "read every key on every node").

The protocol (all a custom generator needs)
    `gen.op(ctx) -> Template | Pending | None`
      - a Template: perform this op now, as ctx.thread;
      - `Pending(until)`: nothing for this thread right now; ask again at `until` (seconds since
        the test began) or, when `until` is None, after some op completes;
      - None: exhausted, for every thread, for good.
    `gen.update(ctx, invoke, complete)`: told about every completed op (default: ignored).
    One thread calls a generator tree (the interpreter's loop; in the simulator, its one event
    loop), so generator code needs no locking. Time comes from ctx.time, randomness from ctx.rng
    (seeded by --seed): never read the clock or the global `random` inside a generator, and a
    schedule is reproducible;
    `simulate()` drives a generator in virtual time and is fully deterministic.

Lifting: anything accepted where a generator is expected
    Template / dict  -> emits that op once (Jepsen: a map is a one-shot generator)
    callable(ctx)    -> called for every op; returns a template (or a generator, which then runs
                        to exhaustion), or None to end
    list / tuple     -> each element in order (`seq`)
    None             -> exhausted

Combinators (Jepsen's names where they exist)
    mix(*gens)                 random choice among the live ones for each op
    seq(*gens) / phases(*gens) one after another; phases also waits for every thread to be idle
                               between stages (`synchronize`)
    limit(n, g) / once(g)      at most n ops (once: 1)
    repeat(x, n=None)          x (a template or generator) again and again, n times or forever
    cycle(g, n=None)           a fresh copy of g each time it runs out
    stagger(dt, g)             ops spaced by random intervals averaging dt (across all threads)
    rate(r, g)                 ~r ops/s in total (stagger 1/r); r <= 0 means unlimited
    delay(dt, g)               ops exactly dt apart
    sleep(dt)                  nothing for dt seconds, then exhausted (a pause inside seq)
    time_limit(dt, g)          ends dt seconds after its first op was asked for
    each_thread(g)             every thread gets its own copy of g
    clients(g) / nemesis(g)    only client threads / only the nemesis thread take ops from g
    nemesis(ng, cg)            Jepsen's nemesis routing: ng on the nemesis thread beside cg on clients
    on_threads(pred, g)        only threads for which pred(thread) is true
    any_of(*gens)              whichever offers an op first
    reserve(n, a, m, b, rest)  client threads 0..n-1 run a, the next m run b, the others rest
    log(message)               a line in jepsen.log when reached (marks stages of a schedule)
    flip_flop(a, b)            alternates a, b, a, b ... (start/stop fault schedules)
    map_ops(fn, g), filter_ops(pred, g), until_ok(g), defer(fn), synchronize(g)

A typical test:
    main = time_limit(60, nemesis(
        cycle([sleep(10), {"f": "start-partition"}, sleep(10), {"f": "stop-partition"}]),
        rate(100, mix(reads, writes))))
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from jepsen_py.errors import BadInput, describe, quote
from jepsen_py.history import INFO, NEMESIS, OK, Op

Thread = int | str
"""A worker: 0..concurrency-1 for clients, "nemesis" for the nemesis worker."""


@dataclass(slots=True)
class Template:
    """What a generator asks for; the runner adds process, time and index to make the invoke."""

    f: str
    key: Any = None
    value: Any = None
    node: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, x: Template | dict[str, Any]) -> Template:
        if isinstance(x, Template):
            return x
        if not isinstance(x, dict) or "f" not in x:
            raise TypeError(f"an op template needs at least an 'f': {x!r}")
        if not _TEMPLATE_FIELDS.issuperset(x):
            unknown = sorted(set(x) - _TEMPLATE_FIELDS)
            raise TypeError(f"op template has unknown fields {unknown}: {x!r}")
        meta = x.get("meta")
        return cls(x["f"], x.get("key"), x.get("value"), x.get("node"), dict(meta) if meta else {})


_TEMPLATE_FIELDS = frozenset({"f", "key", "value", "node", "meta"})


@dataclass(frozen=True, slots=True)
class Pending:
    """Nothing for this thread now. `until`: ask again then (seconds since the test began);
    None: ask again after some op completes (the runner also re-polls every few ms)."""

    until: float | None = None


PENDING = Pending()

Step = Template | Pending | None


@dataclass(slots=True)
class Context:
    """What a generator knows when asked: the time, who asks, who else exists and is busy."""

    time: float
    thread: Thread
    process: int | str
    rng: random.Random
    threads: tuple[Thread, ...]
    busy: Collection[Thread] = ()
    nodes: tuple[str, ...] = ()

    @property
    def client_threads(self) -> tuple[Thread, ...]:
        return tuple(t for t in self.threads if isinstance(t, int))

    def free(self) -> bool:
        """Whether every thread in scope other than the asker is idle."""
        return not any(t in self.busy for t in self.threads if t != self.thread)

    def but(self, *, rng: random.Random | None = None, threads: tuple[Thread, ...] | None = None) -> Context:
        """This context with another rng or thread set: the one place that lists the fields, and
        cheaper than dataclasses.replace, which wrappers would otherwise pay on every ask."""
        return Context(self.time, self.thread, self.process, self.rng if rng is None else rng,
                       self.threads if threads is None else threads, self.busy, self.nodes)


def _earliest(a: Pending | None, b: Pending) -> Pending:
    if a is None:
        return b
    if a.until is None:
        return b
    if b.until is None:
        return a
    return a if a.until <= b.until else b


class Generator:
    """Base class. Subclasses implement `op`; `update` is optional."""

    def op(self, ctx: Context) -> Step:
        raise NotImplementedError

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        """Called for every completed op in the generator's scope."""

    def fresh(self) -> Generator:
        """An unstarted copy (each_thread, cycle). Generators keep their state in attributes, and
        a copy taken before the first `op` is pristine.

        Only the generator tree is copied (generators and the lists, dicts and sets holding them);
        everything else they refer to (functions, clients, counters, workload state) is shared, as
        it should be: a value counter must stay unique across the copies, and a lock cannot be
        copied at all."""
        return _copy_tree(self, {})


def _copy_tree(x: Any, memo: dict[int, Any]) -> Any:
    if isinstance(x, Generator):
        if id(x) in memo:
            return memo[id(x)]
        new = copy.copy(x)
        memo[id(x)] = new
        for k, v in vars(new).items():
            setattr(new, k, _copy_tree(v, memo))
        return new
    if isinstance(x, list):
        return [_copy_tree(v, memo) for v in x]
    if isinstance(x, tuple) and type(x) is tuple:
        return tuple(_copy_tree(v, memo) for v in x)
    if isinstance(x, dict):
        return {k: _copy_tree(v, memo) for k, v in x.items()}
    if isinstance(x, set):
        return set(x)
    if isinstance(x, Template):
        return replace(x, meta=dict(x.meta))
    return x


GenLike = (
    Generator | Template | dict[str, Any] | Callable[[Context], Any] | list[Any] | tuple[Any, ...] | None
)


def lift(x: GenLike) -> Generator:
    """Turns anything generator-like (see the module docstring) into a Generator."""
    if isinstance(x, Generator):
        return x
    if x is None:
        return Empty()
    if isinstance(x, Template | dict):
        return Once(Template.of(x))
    if isinstance(x, list | tuple):
        return Seq([lift(g) for g in x])
    if callable(x):
        return Fn(x)
    raise TypeError(f"not a generator: {x!r}")


class Empty(Generator):
    def op(self, ctx: Context) -> Step:
        return None


class Once(Generator):
    """One op, then exhausted."""

    def __init__(self, template: Template) -> None:
        self.template = template
        self.done = False

    def op(self, ctx: Context) -> Step:
        if self.done:
            return None
        self.done = True
        return self.template


class Fn(Generator):
    """Calls fn(ctx) for every op. It may return a template/dict, a generator (which runs until it
    is exhausted, then fn is called again), or None to end."""

    def __init__(self, fn: Callable[[Context], Any]) -> None:
        self.fn = fn
        self.inner: Generator | None = None
        self.done = False

    def op(self, ctx: Context) -> Step:
        while not self.done:
            if self.inner is not None:
                step = self.inner.op(ctx)
                if step is not None:
                    return step
                self.inner = None
            x = self.fn(ctx)
            if x is None:
                self.done = True
                return None
            if isinstance(x, Template | dict):
                return Template.of(x)
            self.inner = lift(x)
        return None

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if self.inner is not None:
            self.inner.update(ctx, invoke, complete)


class Seq(Generator):
    """Each generator in turn; moves on when the current one is exhausted."""

    def __init__(self, gens: Iterable[Generator]) -> None:
        self.gens = list(gens)
        self.i = 0

    def op(self, ctx: Context) -> Step:
        while self.i < len(self.gens):
            step = self.gens[self.i].op(ctx)
            if step is not None:
                return step
            self.i += 1
        return None

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if self.i < len(self.gens):
            self.gens[self.i].update(ctx, invoke, complete)


class Mix(Generator):
    """A random live generator for each op (ctx.rng); one that is pending lets the others try,
    exhausted ones drop out."""

    def __init__(self, gens: Iterable[Generator]) -> None:
        self.gens = list(gens)

    def op(self, ctx: Context) -> Step:
        pending: Pending | None = None
        live = list(range(len(self.gens)))
        dead: list[int] = []
        try:
            while live:
                j = live.pop(ctx.rng.randrange(len(live)))
                step = self.gens[j].op(ctx)
                if step is None:
                    dead.append(j)
                elif isinstance(step, Pending):
                    pending = _earliest(pending, step)
                else:
                    return step
            return pending
        finally:
            if dead:
                self.gens = [g for i, g in enumerate(self.gens) if i not in dead]

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        for g in self.gens:
            g.update(ctx, invoke, complete)


class AnyOf(Generator):
    """Asks each generator in order and takes the first op offered (Jepsen's `any`)."""

    def __init__(self, gens: Iterable[Generator]) -> None:
        self.gens = list(gens)
        self.exhausted = [False] * len(self.gens)

    def op(self, ctx: Context) -> Step:
        pending: Pending | None = None
        for i, g in enumerate(self.gens):
            if self.exhausted[i]:
                continue
            step = g.op(ctx)
            if step is None:
                self.exhausted[i] = True
            elif isinstance(step, Pending):
                pending = _earliest(pending, step)
            else:
                return step
        return pending

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        for i, g in enumerate(self.gens):
            if not self.exhausted[i]:
                g.update(ctx, invoke, complete)


class Limit(Generator):
    def __init__(self, n: int, gen: Generator) -> None:
        self.remaining = n
        self.gen = gen

    def op(self, ctx: Context) -> Step:
        if self.remaining <= 0:
            return None
        step = self.gen.op(ctx)
        if isinstance(step, Template):
            self.remaining -= 1
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


class Repeat(Generator):
    """A template n times (or forever)."""

    def __init__(self, template: Template, n: int | None) -> None:
        self.template = template
        self.remaining = n

    def op(self, ctx: Context) -> Step:
        if self.remaining is not None:
            if self.remaining <= 0:
                return None
            self.remaining -= 1
        return replace(self.template, meta=dict(self.template.meta))


class Cycle(Generator):
    """A fresh copy of the original each time the current copy is exhausted; n rounds or forever.
    A round that is exhausted at once (no op, no waiting) ends the cycle: it would spin forever."""

    def __init__(self, gen: Generator, n: int | None) -> None:
        self.original = gen.fresh()
        self.current = gen
        self.remaining = n
        self.active_this_round = False

    def op(self, ctx: Context) -> Step:
        while True:
            if self.remaining is not None and self.remaining <= 0:
                return None
            step = self.current.op(ctx)
            if step is not None:
                self.active_this_round = True
                return step
            if self.remaining is not None:
                self.remaining -= 1
            if not self.active_this_round:
                return None
            self.active_this_round = False
            self.current = self.original.fresh()

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.current.update(ctx, invoke, complete)


class Sleep(Generator):
    """Nothing for dt seconds from the first time it is asked, then exhausted."""

    def __init__(self, dt: float) -> None:
        self.dt = dt
        self.until: float | None = None

    def op(self, ctx: Context) -> Step:
        if self.until is None:
            self.until = ctx.time + self.dt
        if ctx.time >= self.until:
            return None
        return Pending(self.until)


class Stagger(Generator):
    """Spaces ops by random intervals uniform in [0, 2*dt): dt on average, across all threads.

    The next slot is scheduled from the previous slot (not from now), so the average rate holds
    when workers are briefly late; a backlog older than one second is forgotten rather than burst.
    """

    def __init__(self, dt: float, gen: Generator) -> None:
        self.dt = dt
        self.gen = gen
        self.next_time: float | None = None

    def op(self, ctx: Context) -> Step:
        if self.next_time is None:
            self.next_time = ctx.time
        if ctx.time < self.next_time:
            return Pending(self.next_time)
        step = self.gen.op(ctx)
        if isinstance(step, Template):
            base = max(self.next_time, ctx.time - 1.0)
            self.next_time = base + ctx.rng.uniform(0.0, 2.0 * self.dt)
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


class Delay(Generator):
    """Ops exactly dt apart (the first one at once)."""

    def __init__(self, dt: float, gen: Generator) -> None:
        self.dt = dt
        self.gen = gen
        self.next_time: float | None = None

    def op(self, ctx: Context) -> Step:
        if self.next_time is not None and ctx.time < self.next_time:
            return Pending(self.next_time)
        step = self.gen.op(ctx)
        if isinstance(step, Template):
            base = ctx.time if self.next_time is None else max(self.next_time, ctx.time - 1.0)
            self.next_time = base + self.dt
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


class TimeLimit(Generator):
    """Exhausted dt seconds after the first time it is asked for an op."""

    def __init__(self, dt: float, gen: Generator) -> None:
        self.dt = dt
        self.gen = gen
        self.deadline: float | None = None

    def op(self, ctx: Context) -> Step:
        if self.deadline is None:
            self.deadline = ctx.time + self.dt
        if ctx.time >= self.deadline:
            return None
        step = self.gen.op(ctx)
        if isinstance(step, Pending) and (step.until is None or step.until > self.deadline):
            return Pending(self.deadline if step.until is not None else None)
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


class OnThreads(Generator):
    """Only threads for which pred(thread) holds take ops; the inner generator sees only them."""

    def __init__(self, pred: Callable[[Thread], bool], gen: Generator) -> None:
        self.pred = pred
        self.gen = gen
        self.done = False
        self._src: tuple[Thread, ...] | None = None
        self._scoped: tuple[Thread, ...] = ()

    def _scope(self, ctx: Context) -> Context:
        if ctx.threads is not self._src:  # the thread set rarely changes: filter it once
            self._src = ctx.threads
            self._scoped = tuple(t for t in ctx.threads if self.pred(t))
        return ctx.but(threads=self._scoped)

    def op(self, ctx: Context) -> Step:
        if not self.pred(ctx.thread):
            # Not this thread's generator: wait until the threads it serves exhaust it.
            return None if self.done else PENDING
        step = self.gen.op(self._scope(ctx))
        if step is None:
            self.done = True
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if self.pred(ctx.thread):
            self.gen.update(self._scope(ctx), invoke, complete)


class EachThread(Generator):
    """Every thread in scope gets its own fresh copy; exhausted when every thread's copy is."""

    def __init__(self, gen: Generator) -> None:
        self.original = gen.fresh()
        self.copies: dict[Thread, Generator] = {}
        self.exhausted: set[Thread] = set()

    def op(self, ctx: Context) -> Step:
        if ctx.thread in self.exhausted:
            if all(t in self.exhausted for t in ctx.threads):
                return None
            return PENDING
        g = self.copies.get(ctx.thread)
        if g is None:
            g = self.copies[ctx.thread] = self.original.fresh()
        step = g.op(ctx)
        if step is None:
            self.exhausted.add(ctx.thread)
            return self.op(ctx)
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        g = self.copies.get(ctx.thread)
        if g is not None:
            g.update(ctx, invoke, complete)


class Synchronize(Generator):
    """Waits until every thread in scope is idle, then runs gen (Jepsen's `synchronize`)."""

    def __init__(self, gen: Generator) -> None:
        self.gen = gen
        self.started = False

    def op(self, ctx: Context) -> Step:
        if not self.started:
            if not ctx.free():
                return PENDING
            self.started = True
        return self.gen.op(ctx)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if self.started:
            self.gen.update(ctx, invoke, complete)


class FlipFlop(Generator):
    """One op from a, one from b, one from a, ...; ends when the one whose turn it is ends."""

    def __init__(self, a: Generator, b: Generator) -> None:
        self.gens = [a, b]
        self.turn = 0

    def op(self, ctx: Context) -> Step:
        step = self.gens[self.turn].op(ctx)
        if isinstance(step, Template):
            self.turn = 1 - self.turn
        return step


class MapOps(Generator):
    def __init__(self, fn: Callable[[Template, Context], Template | dict[str, Any]], gen: Generator) -> None:
        self.fn = fn
        self.gen = gen

    def op(self, ctx: Context) -> Step:
        step = self.gen.op(ctx)
        if isinstance(step, Template):
            return Template.of(self.fn(step, ctx))
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


class FilterOps(Generator):
    def __init__(self, pred: Callable[[Template], bool], gen: Generator) -> None:
        self.pred = pred
        self.gen = gen

    def op(self, ctx: Context) -> Step:
        for _ in range(10_000):
            step = self.gen.op(ctx)
            if not isinstance(step, Template) or self.pred(step):
                return step
        return PENDING  # a filter rejecting everything must not hang the runner

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


class UntilOk(Generator):
    """Runs gen until one of its ops completes ok (Jepsen's `until-ok`)."""

    def __init__(self, gen: Generator) -> None:
        self.gen = gen
        self.ok = False

    def op(self, ctx: Context) -> Step:
        return None if self.ok else self.gen.op(ctx)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if complete.type == OK:
            self.ok = True
        self.gen.update(ctx, invoke, complete)


class Defer(Generator):
    """Builds the generator from fn(ctx) the first time it is asked (e.g. final reads of the keys
    the main phase happened to use)."""

    def __init__(self, fn: Callable[[Context], GenLike]) -> None:
        self.fn = fn
        self.gen: Generator | None = None

    def op(self, ctx: Context) -> Step:
        if self.gen is None:
            self.gen = lift(self.fn(ctx))
        return self.gen.op(ctx)

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        if self.gen is not None:
            self.gen.update(ctx, invoke, complete)


# ---- the public constructors -------------------------------------------------------------------


def mix(*gens: GenLike) -> Generator:
    return Mix(lift(g) for g in gens)


def seq(*gens: GenLike) -> Generator:
    return Seq(lift(g) for g in gens)


def phases(*gens: GenLike) -> Generator:
    """Each generator in turn, waiting for every thread to be idle before the next starts."""
    return Seq(Synchronize(lift(g)) for g in gens)


def synchronize(gen: GenLike) -> Generator:
    return Synchronize(lift(gen))


def limit(n: int, gen: GenLike) -> Generator:
    return Limit(n, lift(gen))


def once(gen: GenLike) -> Generator:
    return Limit(1, lift(gen))


def repeat(x: GenLike, n: int | None = None) -> Generator:
    """A template (or dict) n times or forever; a generator is cycled (fresh copy each round)."""
    if isinstance(x, Template | dict):
        return Repeat(Template.of(x), n)
    return Cycle(lift(x), n)


def cycle(gen: GenLike, n: int | None = None) -> Generator:
    return Cycle(lift(gen), n)


def stagger(dt: float, gen: GenLike) -> Generator:
    if dt <= 0:
        return lift(gen)
    return Stagger(dt, lift(gen))


def rate(ops_per_s: float, gen: GenLike) -> Generator:
    """About `ops_per_s` ops per second in total, randomly spaced; <= 0 means as fast as possible."""
    if ops_per_s <= 0:
        return lift(gen)
    return Stagger(1.0 / ops_per_s, lift(gen))


def delay(dt: float, gen: GenLike) -> Generator:
    return Delay(dt, lift(gen))


def sleep(dt: float) -> Generator:
    return Sleep(dt)


def time_limit(dt: float, gen: GenLike) -> Generator:
    return TimeLimit(dt, lift(gen))


def each_thread(gen: GenLike) -> Generator:
    return EachThread(lift(gen))


def on_threads(pred: Callable[[Thread], bool], gen: GenLike) -> Generator:
    return OnThreads(pred, lift(gen))


def is_client_thread(t: Thread) -> bool:
    return isinstance(t, int)


def is_nemesis_thread(t: Thread) -> bool:
    return t == NEMESIS


def clients(gen: GenLike) -> Generator:
    """Only client threads take ops from gen."""
    return OnThreads(is_client_thread, lift(gen))


def nemesis(nemesis_gen: GenLike, client_gen: GenLike = None) -> Generator:
    """nemesis_gen on the nemesis thread; with client_gen, that on the client threads beside it
    (Jepsen's `nemesis` combinator). The whole ends when both are exhausted."""
    n = OnThreads(is_nemesis_thread, lift(nemesis_gen))
    if client_gen is None:
        return n
    return AnyOf([n, clients(client_gen)])


def reserve(*args: int | GenLike) -> Generator:
    """Jepsen's `reserve`: reserve(5, writes, 10, cas, reads) gives client threads 0-4 to
    writes, 5-14 to cas and every other client thread to reads. Each group sees only its threads."""
    if len(args) % 2 != 1:
        raise TypeError("reserve takes (count, generator) pairs and then a default generator")
    gens: list[Generator] = []
    lo = 0
    for i in range(0, len(args) - 1, 2):
        n = args[i]
        if not isinstance(n, int) or n < 0:
            raise TypeError(f"reserve: thread counts must be non-negative integers, got {n!r}")
        gens.append(OnThreads(_ThreadRange(lo, lo + n), lift(args[i + 1])))  # type: ignore[arg-type]
        lo += n
    gens.append(OnThreads(_ThreadRange(lo, None), lift(args[-1])))  # type: ignore[arg-type]
    return AnyOf(gens)


@dataclass(frozen=True)
class _ThreadRange:
    """Client threads lo <= t < hi (hi None: no upper bound); a picklable, printable predicate."""

    lo: int
    hi: int | None

    def __call__(self, t: Thread) -> bool:
        return isinstance(t, int) and t >= self.lo and (self.hi is None or t < self.hi)


class Log(Generator):
    """Writes a line to the run's log when reached, hands out no op (Jepsen's `log`)."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.done = False

    def op(self, ctx: Context) -> Step:
        if not self.done:
            self.done = True
            logging.getLogger("jepsen_py.generator").info("%s", self.message)
        return None


def log(message: str) -> Generator:
    return Log(message)


class Checked(Generator):
    """Someone else's generator (a plugin's, a test's own), its every step checked as it is handed
    out: an op whose f is not a name, a step that is not an op, or an exception from its code ends
    the run with one line naming `label` (BadInput, exit 254), before the op reaches the history.
    A generator's ops exist only as the run asks for them, so this is the earliest they can be seen."""

    def __init__(self, label: str, gen: Generator) -> None:
        self.label = label
        self.gen = gen

    def op(self, ctx: Context) -> Step:
        try:
            step = self.gen.op(ctx)
        except BadInput as e:
            raise BadInput(f"{self.label}: {e}") from None
        except Exception as e:
            raise BadInput(f"{self.label}: its generator raised {describe(e)}") from None
        if step is None or isinstance(step, Pending):
            return step
        if not isinstance(step, Template):
            raise BadInput(f"{self.label}: its generator gave {quote(step)}, which is not an op "
                           f"(a template or dict with an 'f', a Pending, or None to end)")
        problem = template_problem(step)
        if problem:
            raise BadInput(f"{self.label}: its generator gave an op with {problem}")
        return step

    def update(self, ctx: Context, invoke: Op, complete: Op) -> None:
        self.gen.update(ctx, invoke, complete)


def template_problem(t: Template) -> str | None:
    """What makes `t` no op the history can record (None: nothing)."""
    if not isinstance(t.f, str) or not t.f:
        return f"f={quote(t.f)} (an op's f is a non-empty name)"
    if t.node is not None and not isinstance(t.node, str):
        return f"node={quote(t.node)} (a node is named by a string)"
    if not isinstance(t.meta, dict):
        return f"meta={quote(t.meta)} (meta is a dict)"
    return None


def checked(label: str, gen: GenLike) -> Generator:
    return Checked(label, lift(gen))


def any_of(*gens: GenLike) -> Generator:
    return AnyOf(lift(g) for g in gens)


def flip_flop(a: GenLike, b: GenLike) -> Generator:
    return FlipFlop(lift(a), lift(b))


def map_ops(fn: Callable[[Template, Context], Template | dict[str, Any]], gen: GenLike) -> Generator:
    return MapOps(fn, lift(gen))


def filter_ops(pred: Callable[[Template], bool], gen: GenLike) -> Generator:
    return FilterOps(pred, lift(gen))


def until_ok(gen: GenLike) -> Generator:
    return UntilOk(lift(gen))


def defer(fn: Callable[[Context], GenLike]) -> Generator:
    return Defer(fn)


def fn(f: Callable[[Context], Any]) -> Generator:
    """Explicitly lift a function (same as passing it where a generator is expected)."""
    return Fn(f)


# ---- deterministic simulation ---------------------------------------------------------------


@dataclass(slots=True)
class SimOp:
    """One op handed out by `simulate`: when, to which thread and process."""

    time: float
    thread: Thread
    process: int | str
    template: Template


def simulate(
    gen: GenLike,
    *,
    concurrency: int = 1,
    nemesis_thread: bool = False,
    seed: int = 0,
    latency: float | Callable[[Template, random.Random], float] = 0.0,
    complete: Callable[[Template, random.Random], str] = lambda t, r: OK,
    nodes: tuple[str, ...] = (),
    max_ops: int = 1_000_000,
    max_time: float = 86_400.0,
) -> list[SimOp]:
    """Drives `gen` in virtual time with `concurrency` client threads (plus the nemesis thread),
    each op taking `latency` seconds and completing as `complete` says. Fully deterministic for a
    seed: the way to test a schedule, or to preview one, without a cluster."""
    g = lift(gen)
    rng = random.Random(seed)
    threads: tuple[Thread, ...] = tuple(range(concurrency)) + ((NEMESIS,) if nemesis_thread else ())
    process: dict[Thread, int | str] = {t: t for t in threads}
    ready_at: dict[Thread, float] = dict.fromkeys(threads, 0.0)
    running: dict[Thread, tuple[float, Op]] = {}
    done: set[Thread] = set()
    now = 0.0
    out: list[SimOp] = []
    index = 0

    def finish(t: Thread) -> None:
        nonlocal index
        _, inv = running.pop(t)
        tpl = Template(inv.f, inv.key, inv.value)
        typ = complete(tpl, rng) if t != NEMESIS else INFO
        comp = replace(inv, index=index, type=typ)
        index += 1
        g.update(_ctx(t), inv, comp)
        if typ == INFO and isinstance(t, int):
            process[t] = int(process[t]) + concurrency

    def _ctx(t: Thread) -> Context:
        return Context(now, t, process[t], rng, threads, running.keys(), nodes)

    while len(out) < max_ops and now <= max_time:
        # Complete everything due by now, in time then thread order.
        for t in sorted((t for t in running if running[t][0] <= now), key=lambda t: (running[t][0], str(t))):
            finish(t)
        progressed = False
        wake: list[float] = []
        for t in threads:
            if t in done or t in running or ready_at[t] > now:
                continue
            step = g.op(_ctx(t))
            if step is None:
                done.update(threads)
                break
            if isinstance(step, Pending):
                ready_at[t] = step.until if step.until is not None and step.until > now else now
                if step.until is not None and step.until > now:
                    wake.append(step.until)
                continue
            out.append(SimOp(now, t, process[t], step))
            inv = Op(index, int(now * 1e9), "invoke", process[t], step.f, step.key, step.value, step.node)
            index += 1
            lat = latency(step, rng) if callable(latency) else latency
            running[t] = (now + lat, inv)
            progressed = True
        if len(done) == len(threads) and not running:
            break
        if progressed:
            continue
        candidates = [end for end, _ in running.values()]
        idle = (t for t in threads if t not in done and t not in running)
        candidates += [ready_at[t] for t in idle if ready_at[t] > now]
        candidates += wake
        if not candidates:
            break  # everyone pending on an event that can never come
        now = max(now, min(candidates))
        if len(done) == len(threads):
            for t in list(running):
                finish(t)
            break
    return out


def templates(ops: Iterable[SimOp]) -> Iterator[Template]:
    for o in ops:
        yield o.template
