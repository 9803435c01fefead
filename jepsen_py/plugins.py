"""Loading what the command line names from outside the repository: `--db`, `--workload`,
`--nemesis`, `--checker` and `--generator` take `package.module:name` or an installed entry point.

Nothing in jepsen_py/ knows which system is tested. A reference is found by import path, or by an
entry point in the option's group (`jepsen_py.db`, `jepsen_py.workload`, `jepsen_py.nemesis`,
`jepsen_py.checker`, `jepsen_py.generator`), so `--db etcd` works once a plugin package registers
`etcd = mypkg.etcd:EtcdDB`. The current directory is importable for these references, as it is
under `python -m`, so a module beside the user needs no installing.

What each reference must name, constructed with the TestSpec:
  --db         a class, `Cls(spec)` -> DB
  --workload   a function, `fn(spec)` -> jepsen_py.workload.Workload
  --nemesis    a class, `Cls(spec)` -> Nemesis; its schedule is its `generator(spec)` when it has
               one, else one fault toggled every --nemesis-interval: the f starting with "start"
               then the one starting with "stop"
  --checker    a function or class, `fn(spec)` -> Checker (added to the workload's checkers)
  --generator  a function, `fn(spec)` -> Generator (replaces the workload's main generator)
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from jepsen_py.backends import BackendKind
from jepsen_py.bounded import Escaped, TimedOut, call_bounded, said
from jepsen_py.errors import BadInput, describe, quote
from jepsen_py.generator import Template, any_of, checked, is_nemesis_thread, on_threads
from jepsen_py.history import OBSERVER, OK, Op, parse_line
from jepsen_py.nemeses import NEMESES
from jepsen_py.nemeses import build as build_builtin_nemesis
from jepsen_py.nemeses.compose import ComposedNemesis, Family, FaultSchedule
from jepsen_py.nemeses.faults import declared
from jepsen_py.numbers import MAX_NODES
from jepsen_py.protocols import CAPABILITIES, DB, Checker, Nemesis, Test, TestSpec
from jepsen_py.references import canonical_db, check_reference, current_dir_importable
from jepsen_py.references import import_module as _import
from jepsen_py.workload import Workload
from jepsen_py.workloads import WORKLOADS

if TYPE_CHECKING:
    from jepsen_py.generator import Generator
    from jepsen_py.nemeses.compose import Family
    from jepsen_py.workload import Workload

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "jepsen_py.db"
GROUPS = {
    "--db": ENTRY_POINT_GROUP,
    "--workload": "jepsen_py.workload",
    "--nemesis": "jepsen_py.nemesis",
    "--checker": "jepsen_py.checker",
    "--generator": "jepsen_py.generator",
}


def entry_point_names(option: str) -> list[str]:
    """The names installed in the entry-point group of `option` (e.g. --workload)."""
    return sorted({ep.name for ep in entry_points(group=GROUPS[option])})


def is_reference(name: str, option: str) -> bool:
    """True if `name` is MODULE:NAME or an installed entry point of the option's group."""
    return ":" in name or name in entry_point_names(option)


class PluginFailed(BadInput):
    """Plugin code raised: one line naming the plugin (exit 254: the user's plugin is at fault, not
    jepsen-py); `cause` is what it raised."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def plugin_call(option: str, ref: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, plugin code: whatever it raises is one PluginFailed line naming the option, the
    plugin and `what` it was doing, never a traceback. Ctrl-C still stops."""
    try:
        return fn(*args)
    except BadInput as e:
        raise PluginFailed(f"{option}: {ref}: {e}", e) from None
    except (Exception, SystemExit) as e:
        raise PluginFailed(f"{option}: {ref}: {what} raised {describe(e)}", e) from None


# ---- plugin code the run calls: bounded in time, its answers checked ------------------------------

#: How long a declaration a DB class makes (db_options(), read_modes(), workloads()) may take to
#: answer: a constant it states, read before anything is made, so one still thinking after this
#: long is broken, not slow.
DECLARATION_S = 10.0
#: The most one status dict may weigh as JSON: the observer writes one per node ten times a second.
MAX_STATUS_BYTES = 64 << 10
#: What the documented status keys hold (docs/plugins.md, the status dict); None for each is fine.
STATUS_TYPES: dict[str, tuple[type, ...]] = {"role": (str,), "term": (int,), "leader": (str,),
                                             "applied": (int,)}
#: Terms and applied indices are counters: a 64-bit one is the most any system keeps.
MAX_COUNTER = 2**63 - 1
#: Read modes and --db-option keys as the command line can name them.
MAX_DECLARED = 1_000
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")  # flags.parse_pairs' rule for a key


# A plugin's hook that did not return within its bound, and one that raised KeyboardInterrupt or
# SystemExit on a thread of ours (jepsen_py.bounded, where the bounded call lives).
HookTimedOut = TimedOut
HookExited = Escaped


def is_signal(e: BaseException) -> bool:
    """Whether `e` may stand for a real Ctrl-C or SIGTERM (which `run` turns into one), and must
    stop the run: a KeyboardInterrupt on the main thread, where alone signals are handled. On any
    other thread, and SystemExit anywhere, it is what the code that raised it chose to raise."""
    return isinstance(e, KeyboardInterrupt) and threading.current_thread() is threading.main_thread()


def message(e: BaseException) -> str:
    """An exception's message on one line (whitespace folded, cut short), even when its str()
    raises: then its type alone."""
    try:
        text = " ".join(str(e).split())
    except Exception:
        return f"{type(e).__name__} (whose message could not be read)"
    return text if len(text) <= 300 else text[:300] + "..."


class Asker:
    """One hook asked again and again (primaries() in the leader waits, five times a second), each
    ask within its own bound, all on one daemon thread rather than a thread per ask. Once an ask
    does not return, the thread is left behind and every later ask is HookTimedOut at once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event] | None] = \
            queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stuck = False

    def ask(self, fn: Callable[[], Any], *, timeout_s: float) -> Any:
        """fn()'s value, or what it raised (KeyboardInterrupt and SystemExit as HookExited)."""
        if self._stuck:
            raise HookTimedOut(f"{self.name} did not return before (left behind)")
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self._thread.start()
        box: list[Any] = []
        done = threading.Event()
        self._jobs.put((fn, box, done))
        if not done.wait(timeout_s):
            self._stuck = True
            log.info("%s did not return within %g s; its thread is left behind", self.name, timeout_s)
            raise HookTimedOut(f"{self.name} did not return within {timeout_s:g} s (left behind)")
        value, failed = box[0]
        if failed is not None:
            raise failed if isinstance(failed, Exception) else HookExited(failed)
        return value

    def close(self) -> None:
        """Lets the thread end (at once, or when an ask it is stuck in returns)."""
        if self._thread is not None:
            self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, box, done = job
            try:
                box.append((fn(), None))
            except BaseException as e:  # the asker's to judge
                box.append((None, e))
            done.set()


def each_node(fn: Callable[[Test, str], Any], test: Test, nodes: Sequence[str], *, timeout_s: float,
              name: str) -> dict[str, BaseException]:
    """fn(test, node) on every node at once, each on a daemon thread, within one deadline: what
    each node's call raised (KeyboardInterrupt and SystemExit as HookExited), HookTimedOut for
    those still running at the deadline (named in jepsen.log and left behind); nothing for the
    nodes whose call returned."""
    failed: dict[str, BaseException] = {}
    lock = threading.Lock()

    def run(node: str) -> None:
        try:
            fn(test, node)
        except BaseException as e:
            with lock:
                failed[node] = e if isinstance(e, Exception) else HookExited(e)

    threads = {n: threading.Thread(target=run, args=(n,), name=f"{name} {n}", daemon=True) for n in nodes}
    for t in threads.values():
        t.start()
    deadline = time.monotonic() + timeout_s
    for t in threads.values():
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [n for n, t in threads.items() if t.is_alive()]
    with lock:
        out = dict(failed)
    if stuck:
        log.info("%s did not return within %g s on %s; their threads are left behind", name, timeout_s,
                 ", ".join(stuck))
        for n in stuck:
            out[n] = HookTimedOut(f"{name} on {n} did not return within {timeout_s:g} s")
    return out


def declaration(ref: str, what: str, fn: Callable[[], Any], *, timeout_s: float = DECLARATION_S) -> Any:
    """A DB's declaration `what` (fn runs it and checks its answer), bounded: whatever goes wrong
    (it raises, exits, never returns, answers what is not the declaration) is one --db line, 254."""
    try:
        return call_bounded(fn, timeout_s=timeout_s, name=f"{ref} {what}")
    except HookTimedOut:
        raise BadInput(f"--db: {ref}: {what} did not return within {timeout_s:g} s") from None
    except BadInput as e:
        raise PluginFailed(f"--db: {ref}: {message(e)}", e) from None
    except HookExited as e:
        raise PluginFailed(f"--db: {ref}: {what} raised {e}", e.cause) from None
    except Exception as e:
        raise PluginFailed(f"--db: {ref}: {what} raised {said(e)}", e) from None


def _kind(x: object) -> str:
    """What a plugin gave, by kind, for a refusal: its type's name (never its str(), which may
    raise or be megabytes long), None as None."""
    return "None" if x is None else type(x).__name__


def _label(db: object) -> str:
    return str(getattr(db, "__name__", None) or type(db).__name__)


def _declared(db: object, method: str) -> Any:
    """The DB's answer to `method()`, or None when it does not declare one (on the caller's thread:
    looking the method up may run the plugin's code too)."""
    fn = getattr(db, method, None)
    return fn() if callable(fn) else None


def checked_names(answer: object, what: str, *, limit: int = MAX_DECLARED,
                  pattern: re.Pattern[str] | None = _NAME) -> tuple[str, ...]:
    """A declaration that must be a list of names (read_modes(), workloads()): BadInput naming
    `what` and what it gave instead. `pattern`: what a name must match (None: any text of 1 to 300
    characters, as a workload reference MODULE:FUNC)."""
    if not isinstance(answer, list | tuple):
        raise BadInput(f"{what} returned {_kind(answer)}, not a list of names")
    items = list.__iter__(answer) if isinstance(answer, list) else tuple.__iter__(answer)
    names = tuple(items)
    if len(names) > limit:
        raise BadInput(f"{what} returned {len(names)} names (at most {limit})")
    for n in names:
        if type(n) is not str:
            raise BadInput(f"{what} gave {_kind(n)}, not a name")
        if pattern is None:
            if not 0 < len(n) <= 300:
                raise BadInput(f"{what} gave {quote(n)}, which is not a name")
        elif not pattern.match(n):
            raise BadInput(f"{what} gave {quote(n)}, which is not a usable name "
                           f"(a letter, then letters, digits, _ . -)")
    return names


def checked_option_keys(answer: object) -> dict[str, str]:
    """db_options()'s answer as {key: what it sets}: BadInput for anything else."""
    what = "db_options()"
    if not isinstance(answer, dict):
        raise BadInput(f"{what} returned {_kind(answer)}, not a dict {{key: what it sets}}")
    items = list(dict.items(answer))
    if len(items) > MAX_DECLARED:
        raise BadInput(f"{what} declares {len(items)} keys (at most {MAX_DECLARED})")
    out: dict[str, str] = {}
    for k, v in items:
        if type(k) is not str:
            raise BadInput(f"{what} gave a key of type {_kind(k)}, not text")
        if not _NAME.match(k):
            raise BadInput(f"{what} gave the key {quote(k)}, which --db-option cannot name "
                           f"(a letter, then letters, digits, _ . -)")
        if type(v) is not str:
            raise BadInput(f"{what} says what {k!r} sets with {_kind(v)}, not text")
        out[k] = v[:500]
    return out


def checked_primaries(answer: object, nodes: Sequence[str], what: str = "primaries()") -> list[str]:
    """primaries()'s answer as the node names it claims lead: a list (tuple, set) of names of the
    test's nodes, possibly empty; BadInput naming what it gave instead."""
    if not isinstance(answer, list | tuple | set | frozenset):
        raise BadInput(f"{what} returned {_kind(answer)}, not a list of node names")
    if len(answer) > MAX_NODES:
        raise BadInput(f"{what} returned {len(answer)} names (a test has at most {MAX_NODES} nodes)")
    items = list(answer) if isinstance(answer, set | frozenset) else list(
        list.__iter__(answer) if isinstance(answer, list) else tuple.__iter__(answer))
    out: list[str] = []
    for n in items:
        if type(n) is not str:
            raise BadInput(f"{what} gave {_kind(n)}, not a node name")
        if n not in nodes:
            raise BadInput(f"{what} named {quote(n)}, which is not a node of the test "
                           f"({', '.join(nodes[:5])}{', ...' if len(nodes) > 5 else ''})")
        if n not in out:
            out.append(n)
    return out


def primaries_of(db: object, test: Test, nodes: Sequence[str], *, timeout_s: float | None,
                 log_raise: Callable[[BaseException], None] | None = None, asker: Asker | None = None
                 ) -> list[str]:
    """Who claims to lead, as db.primaries(test) says, checked (checked_primaries): [] when it
    raised (a DB that cannot answer has no leader for now; `log_raise` hears of it), BadInput when
    its answer is no list of the test's node names, HookTimedOut when it did not return within
    `timeout_s` (asked on `asker`'s thread, else on a thread of its own; None: on this one, as the
    simulator asks)."""
    def ask() -> list[str]:
        try:
            answer = db.primaries(test)  # type: ignore[attr-defined]
        except BaseException as e:
            if is_signal(e):
                raise
            if log_raise is not None:
                log_raise(e)
            return []
        return checked_primaries(answer, nodes)

    if timeout_s is None:
        return ask()
    if asker is not None:
        return list(asker.ask(ask, timeout_s=timeout_s))
    return list(call_bounded(ask, timeout_s=timeout_s, name="primaries()"))


def checked_status(answer: object, node: str, what: str = "status()") -> dict[str, Any] | None:
    """status()'s answer as the observer records it: None (the node did not answer), or a dict
    with text keys whose documented keys have their types, that history.jsonl can hold and read
    back (JSON, at most MAX_STATUS_BYTES); BadInput naming what it gave instead. Returns the dict
    as read back, so what is recorded is exactly what a reader of the history will see."""
    if answer is None:
        return None
    if not isinstance(answer, dict):
        raise BadInput(f"{what} returned {_kind(answer)}, not a dict or None")
    items = list(dict.items(answer))
    for k, v in items:
        if type(k) is not str:
            raise BadInput(f"{what} gave a key of type {_kind(k)}, not text")
        types = STATUS_TYPES.get(k)
        if types is None or v is None:
            continue
        if type(v) not in types:
            expected = " or ".join(t.__name__ for t in types)
            raise BadInput(f"{what} gave {k}={_kind(v)}, not {expected} or None")
        if isinstance(v, int) and not -MAX_COUNTER <= v <= MAX_COUNTER:
            raise BadInput(f"{what} gave {k}={quote(v)}, beyond a 64-bit counter")
    sample = Op(0, 0, OK, OBSERVER, "status", value=dict(items), node=node)
    try:
        tail = sample._json_tail()
    except (TypeError, ValueError, RecursionError) as e:
        raise BadInput(f"{what} gave a value that is not JSON ({str(e)[:80]})") from None
    if len(tail) > MAX_STATUS_BYTES:
        raise BadInput(f"{what} gave a dict of {len(tail)} bytes as JSON (at most {MAX_STATUS_BYTES})")
    try:
        value = parse_line('{"index":0,' + tail, where="status").value
    except BadInput as e:
        raise BadInput(f"{what} gave a value history.jsonl cannot read back ({e})") from None
    return value if isinstance(value, dict) else None


def declared_bugs(db: str) -> tuple[str, ...]:
    """The --bug names the DB named `db` declares with a `known_bugs()` static method; () if none."""
    cls = load_object(db, option="--db")
    declared = getattr(cls, "known_bugs", None)
    if not callable(declared):
        return ()
    return plugin_call("--db", db, "known_bugs()", lambda: tuple(declared()))


def load_object(ref: str, *, option: str = "--db") -> Any:
    """The object named by `module:attr` (attr may be dotted), or by an entry point name in the
    option's group. A module that fails to import (a syntax error, a missing dependency, an
    exception at import time) is one line naming it."""
    group = GROUPS.get(option, ENTRY_POINT_GROUP)
    if option == "--db":
        ref = canonical_db(ref)
    form = "MODULE:CLASS" if option in ("--db", "--nemesis") else "MODULE:FUNC"
    if ":" not in ref:
        eps = [ep for ep in entry_points(group=group) if ep.name == ref]
        if not eps:
            raise BadInput(f"{option}: {ref!r} is neither {form} nor an installed "
                           f"'{group}' entry point")
        return plugin_call(option, f"{ref} (entry point {eps[0].value})", "loading it", eps[0].load)
    current_dir_importable()
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise BadInput(f"{option}: expected {form}, got {ref!r}")
    check_reference(ref, option)
    obj: Any = _import(module_name, option, ref)
    for part in attr.split("."):
        try:
            obj = plugin_call(option, ref, f"looking up {part!r}", getattr, obj, part)
        except PluginFailed as e:
            if not isinstance(e.cause, AttributeError):
                raise
            raise BadInput(f"{option}: module {module_name!r} has no {attr!r}") from None
    return obj


def load_db(ref: str, spec: TestSpec) -> DB:
    """Instantiates the DB class named by `ref` as Cls(spec)."""
    cls = load_object(ref, option="--db")
    if not callable(cls):
        raise BadInput(f"--db: {ref!r} is not a class")
    try:
        db = plugin_call("--db", ref, f"{ref}(spec)", cls, spec)
    except PluginFailed as e:
        if not isinstance(e.cause, TypeError):
            raise
        raise BadInput(f"--db: cannot construct {ref}(spec): {describe(e.cause)}") from None
    missing = [m for m in ("setup", "teardown", "client", "log_files")
               if not callable(getattr(db, m, None))]
    if missing:
        raise BadInput(f"--db: {ref} lacks the DB methods {', '.join(missing)}")
    return db


def _construct(ref: str, option: str, what: str, spec: TestSpec) -> Any:
    """`ref`'s object called with the spec, every mistake one line naming the option."""
    factory = load_object(ref, option=option)
    if not callable(factory):
        raise BadInput(f"{option}: {ref!r} is not callable")
    try:
        return plugin_call(option, ref, f"{ref}(spec)", factory, spec)
    except PluginFailed as e:
        if not isinstance(e.cause, TypeError):
            raise
        raise BadInput(f"{option}: cannot build {what} from {ref}(spec): {describe(e.cause)}") from None


def builtin_workloads() -> dict[str, Callable[[TestSpec], Workload]]:
    """The workloads shipped with jepsen-py: name -> factory(spec)."""
    return dict(WORKLOADS)


def served_workloads(kind: BackendKind | None) -> dict[str, Callable[[TestSpec], Workload]]:
    """The workloads `--workload` names on a backend of `kind`: the ones its world serves
    (maelstrom's), else the built-ins (also for None: a backend not known here)."""
    return (kind.workloads() if kind is not None else None) or builtin_workloads()


def builtin_nemeses() -> list[str]:
    """The nemesis names shipped with jepsen-py."""
    return list(NEMESES)


def check_workload_name(name: str, known: dict[str, Any] | None = None) -> None:
    """A built-in workload, an entry point or MODULE:FUNC; anything else is one line."""
    known = builtin_workloads() if known is None else known
    if name in known or is_reference(name, "--workload"):
        return
    choices = ", ".join(sorted([*known, *entry_point_names("--workload")])) or "none registered"
    raise BadInput(f"--workload: unknown workload {name!r} (choose from {choices}, or MODULE:FUNC)")


def check_nemesis_names(names: list[str]) -> None:
    known = builtin_nemeses()
    for n in names:
        if n not in known and not is_reference(n, "--nemesis"):
            choices = ", ".join(["none", *[k for k in known if k != "none"],
                                 *entry_point_names("--nemesis")])
            raise BadInput(f"--nemesis: unknown nemesis {n!r} (choose from {choices}, or MODULE:CLASS; "
                           f"combine with commas)")


def load_workload(ref: str, spec: TestSpec) -> Workload:
    """An outside workload, its generators checked op by op (generator.Checked)."""
    w = _construct(ref, "--workload", "a workload", spec)
    if not isinstance(w, Workload):
        raise BadInput(f"--workload: {ref}(spec) returned {type(w).__name__}, not a "
                       f"jepsen_py.workload.Workload")
    w.generator = plugin_call("--workload", ref, "its generator", checked, f"--workload: {ref}", w.generator)
    if w.final_generator is not None:
        w.final_generator = plugin_call("--workload", ref, "its final generator", checked,
                                        f"--workload: {ref} (final)", w.final_generator)
    return w


def load_checker(ref: str, spec: TestSpec) -> Checker:
    c = _construct(ref, "--checker", "a checker", spec)
    if not callable(getattr(c, "check", None)):
        raise BadInput(f"--checker: {ref}(spec) returned {type(c).__name__}, which has no check()")
    if not getattr(c, "name", None):
        with contextlib.suppress(AttributeError):
            c.name = ref.rpartition(":")[2] or ref
    return c


def load_generator(ref: str, spec: TestSpec) -> Generator:
    """An outside generator, checked op by op (generator.Checked)."""
    g = _construct(ref, "--generator", "a generator", spec)
    try:
        return checked(f"--generator: {ref}", g)
    except (TypeError, ValueError) as e:
        raise BadInput(f"--generator: {ref}(spec) returned no generator: {e}") from None


def build_workload(spec: TestSpec, known: dict[str, Any] | None = None) -> Workload:
    """The workload named by spec.workload (built-in, from `known` when given, or outside), with
    the outside checkers (`options["checkers"]`) added and the main generator replaced by
    `options["generator"]`."""
    known = builtin_workloads() if known is None else known
    check_workload_name(spec.workload, known)
    w = known[spec.workload](spec) if spec.workload in known else load_workload(spec.workload, spec)
    gen_ref = (spec.options or {}).get("generator")
    if gen_ref:
        w.generator = load_generator(str(gen_ref), spec)
    extra = [load_checker(str(r), spec) for r in (spec.options or {}).get("checkers") or []]
    if extra:
        w.checkers = [*w.checkers, *extra]
    return w


def load_nemesis(ref: str, spec: TestSpec) -> tuple[Nemesis, Generator]:
    """An outside nemesis and its schedule, for the nemesis thread only."""
    nem = _construct(ref, "--nemesis", "a nemesis", spec)
    return nem, nemesis_schedule(nem, ref, spec)


def nemesis_schedule(nem: Any, label: str, spec: TestSpec) -> Generator:
    """The schedule of a nemesis object: its own `generator(spec)` when it has one, else each fault
    it declares (`faults()`, nemeses.faults) toggled as the built-in families are, else its
    start*/stop* pair toggled every nemesis interval."""
    missing = [m for m in ("fs", "setup", "invoke", "heal", "teardown")
               if not callable(getattr(nem, m, None))]
    if missing:
        raise BadInput(f"--nemesis: {label} lacks the Nemesis methods {', '.join(missing)}")
    own = getattr(nem, "generator", None)
    if callable(own):
        sched = plugin_call("--nemesis", label, "generator(spec)", own, spec)
        own_gen = plugin_call("--nemesis", label, "its generator", checked, f"--nemesis: {label}", sched)
        return on_threads(is_nemesis_thread, own_gen)

    try:
        kinds = list(dict.fromkeys(declared(nem).values()))
    except ValueError as e:
        raise BadInput(f"--nemesis: {e}") from None
    families = [_family(k.name, min(k.starts), min(k.stops)) for k in kinds if k.stops]
    if not families:
        fs = plugin_call("--nemesis", label, "fs()", lambda: list(nem.fs()))
        if not all(isinstance(f, str) for f in fs):
            raise BadInput(f"--nemesis: {label}: fs() must give op names, got {quote(fs)}")
        fs = sorted(fs)
        starts = [f for f in fs if f.startswith("start")]
        stops = [f for f in fs if f.startswith("stop")]
        if len(starts) != 1 or len(stops) != 1:
            raise BadInput(f"--nemesis: {label} handles {', '.join(fs) or 'nothing'}; without a "
                           f"generator(spec) method or declared faults() it needs exactly one start* "
                           f"and one stop* op")
        families = [_family(label, starts[0], stops[0])]
    if spec.nemesis_interval <= 0:
        raise BadInput(f"--nemesis-interval must be > 0 seconds, got {spec.nemesis_interval}")
    return on_threads(is_nemesis_thread, FaultSchedule.for_spec(families, spec))


def _family(name: str, start: str, stop: str) -> Family:
    """A schedule family that starts with op `start` and stops with op `stop`."""
    return Family(name, lambda rng: Template(start), lambda rng: Template(stop))


def build_nemesis(names: list[Any], spec: TestSpec) -> tuple[Nemesis | None, Generator | None]:
    """Built-in and outside nemeses as one: the built-ins as `nemeses.build` combines them, each
    outside one beside them on its own schedule (whichever is due acts first). Items are names,
    references, or (from the Python API) nemesis objects."""
    if not names:
        return None, None
    refs = [n for n in names if isinstance(n, str)]
    objects = [n for n in names if not isinstance(n, str)]
    check_nemesis_names(refs)
    known = set(builtin_nemeses())
    builtin = [n for n in refs if n in known]
    outside = [n for n in refs if n not in known]
    members: list[Nemesis] = []
    schedules: list[Generator] = []
    if builtin:
        nem, sched = build_builtin_nemesis(builtin, spec)
        members.append(nem)
        schedules.append(sched)
    for ref in outside:
        nem, sched = load_nemesis(ref, spec)
        members.append(nem)
        schedules.append(sched)
    for obj in objects:
        members.append(obj)
        schedules.append(nemesis_schedule(obj, type(obj).__name__, spec))
    if len(members) == 1:
        return members[0], schedules[0]

    try:
        composed = ComposedNemesis(members)
    except ValueError as e:
        raise BadInput(f"--nemesis: {e}") from None
    return composed, any_of(*schedules)


def read_modes(db: object, ref: str | None = None, *, timeout_s: float = DECLARATION_S) -> tuple[str, ...]:
    """The read modes a DB class (or instance) declares with a `read_modes()` static method, the
    first being its default; () for a DB that has no such thing (it takes no --read-mode). A
    declaration that is not a list of names, raises or does not answer is one --db line (254)."""
    ref = ref or _label(db)

    def ask() -> tuple[str, ...]:
        answer = _declared(db, "read_modes")
        return () if answer is None else checked_names(answer, "read_modes()", limit=64)

    return tuple(declaration(ref, "read_modes()", ask, timeout_s=timeout_s))


def db_option_keys(db: object, ref: str | None = None, *, timeout_s: float = DECLARATION_S) -> dict[str, str]:
    """The --db-option keys a DB class (or instance) declares with a `db_options()` static method:
    key -> what it sets. A DB that declares none takes no --db-option; one whose declaration is not
    such a dict (None, a list, keys that are not text), raises or does not answer is one --db line
    (254)."""
    ref = ref or _label(db)

    def ask() -> dict[str, str]:
        fn = getattr(db, "db_options", None)
        return checked_option_keys(fn()) if callable(fn) else {}

    return dict(declaration(ref, "db_options()", ask, timeout_s=timeout_s))


def check_db_flags(spec: TestSpec, db: object | None = None) -> None:
    """--read-mode and --db-option checked against what the DB declares, before anything is
    provisioned; a DB with read modes gets its default one when none was given. `db` is the class
    (or instance), loaded from spec.db when not given."""
    cls = load_object(spec.db, option="--db") if db is None else db
    modes = read_modes(cls, spec.db)
    keys = db_option_keys(cls, spec.db)
    if modes:
        if spec.read_mode is None:
            spec.read_mode = modes[0]
        elif spec.read_mode not in modes:
            raise BadInput(f"--read-mode: {spec.db} serves {', '.join(modes)}, not {spec.read_mode!r}")
    elif spec.read_mode is not None:
        hint = f"its settings are --db-option {', '.join(keys)}" if keys else "it declares no settings"
        raise BadInput(f"--read-mode: {spec.db} has no read modes ({hint})")
    unknown = [k for k in spec.db_options if k not in keys]
    if unknown:
        raise BadInput(f"--db-option: {spec.db} takes no {', '.join(map(repr, unknown))} "
                       f"(it takes: {', '.join(keys) or 'none'})")


def check_capabilities(db: object, nemesis: object, *, db_name: str) -> None:
    """One line (exit 254) when the nemesis needs an optional DB capability the DB lacks, e.g.
    --nemesis kill with a DB that cannot kill and start, or partition-leader with a leaderless one.
    A nemesis says what it needs with `needs()` -> {capability: what needs it}."""
    needs_fn = getattr(nemesis, "needs", None)
    label = type(nemesis).__name__
    needs = plugin_call("--nemesis", label, "needs()", lambda: dict(needs_fn())) if callable(needs_fn) else {}
    for capability, who in needs.items():
        if capability not in CAPABILITIES:
            raise BadInput(f"{who}: needs an unknown DB capability {capability!r} "
                           f"(known: {', '.join(CAPABILITIES)})")
        methods, does = CAPABILITIES[capability]
        lacking = [m for m in methods if not callable(getattr(db, m, None))]
        if lacking:
            raise BadInput(f"{who} needs a DB that can {does} ({', '.join(methods)}); "
                           f"{db_name} has no {', '.join(lacking)}")
