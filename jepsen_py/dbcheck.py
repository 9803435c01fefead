"""`jepsen-py db-check`: a DB plugin's contract exercised on a small cluster, one step at a time,
before a user trusts a test of it.

Each step tries one thing the plugin declares and says whether it worked: provisioning and setup,
its leaders (`primaries`), each node's `status` (the keys the observer and checkers read), its log
files, a client of every workload it serves doing one op of each kind, kill/start and pause/resume
(the node stops answering and comes back), and teardown leaving no listening port or process behind.
What the DB does not declare is skipped, never failed: a leaderless DB has no primaries step.

Every hook is the plugin's code, and each call of one gets `--timeout` on a thread of its own (the
DB's setup and teardown one deadline for every node, as they run at once). A hook that does not
return fails its step, naming it; the steps after it are not tried (each would wait as long again
for a DB that has stopped answering), except teardown, and db-check ends. Threads left behind are
daemon threads: they do not keep the command from ending.

On `--backend sim` there are no remotes: our cluster runs in the simulator, and each step is read
from a short simulated run of each workload with kill and pause faults.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py import assembly
from jepsen_py.backends import backend_kind, get_backend
from jepsen_py.errors import BadInput
from jepsen_py.generator import Context, Pending, Template
from jepsen_py.history import FAIL, INFO, INVOKE, OK, Op, read_history
from jepsen_py.plugins import (
    DECLARATION_S,
    HookExited,
    HookTimedOut,
    build_workload,
    builtin_workloads,
    call_bounded,
    checked_names,
    checked_status,
    declaration,
    each_node,
    load_db,
    primaries_of,
    said,
)
from jepsen_py.protocols import DB, Backend, Remote, Test, TestSpec, capabilities
from jepsen_py.raftdb import RaftMetadataDB
from jepsen_py.seeds import test_rng

log = logging.getLogger(__name__)

#: The roles the checkers and pictures understand; a status may report others, shown as they are.
ROLES = ("leader", "follower", "candidate")
#: Kinds of op per workload tried at most: enough for read/write/cas, add/read, enqueue/dequeue.
MAX_TEMPLATES = 64


@dataclass(slots=True)
class Step:
    """One thing tried: ok True (works), False (does not), None (skipped: not declared)."""

    name: str
    ok: bool | None
    detail: str


@dataclass
class Report:
    db: str
    backend: str
    capabilities: list[str]
    steps: list[Step] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(s.ok is not False for s in self.steps)

    def add(self, name: str, ok: bool | None, detail: str) -> Step:
        step = Step(name, ok, detail)
        self.steps.append(step)
        log.info("db-check %s: %s (%s)", name, {True: "ok", False: "FAILED", None: "skipped"}[ok], detail)
        return step


def claimed_workloads(db: Any, spec: TestSpec, known: list[str], *,
                      timeout_s: float = DECLARATION_S) -> list[str]:
    """The workloads a DB serves: its `workloads()` when it declares them (a list of names; else one
    --db line), else every built-in one whose client it hands out (client(name) raises BadInput
    for the others; one that does not answer within `timeout_s` is tried, and fails its step)."""
    ref = spec.db or type(db).__name__
    declared = getattr(db, "workloads", None)
    if callable(declared):
        return list(declaration(ref, "workloads()", lambda: checked_names(declared(), "workloads()",
                                                                           pattern=None),
                                timeout_s=timeout_s))
    out = []
    for name in known:
        try:
            call_bounded(db.client, name, timeout_s=timeout_s, name=f"client({name!r})")
        except BadInput:
            continue
        except Exception as e:  # a client() that breaks is the plugin's bug: try it, and report
            log.debug("client(%s) raised %s", name, said(e))
        out.append(name)
    return out


def first_ops(spec: TestSpec, workload: str, nodes: list[str]) -> list[Template]:
    """The first op of each kind (f) the workload's main generator hands one client thread."""
    w = build_workload(dataclasses.replace(spec, workload=workload), builtin_workloads())
    rng = random.Random(1)
    seen: dict[str, Template] = {}
    t = 0.0
    for _ in range(MAX_TEMPLATES):
        ctx = Context(time=t, thread=0, process=0, rng=rng, threads=(0,), nodes=tuple(nodes))
        step = w.generator.op(ctx)
        if step is None:
            break
        if isinstance(step, Pending):
            t = step.until if step.until is not None and step.until > t else t + 0.01
            continue
        seen.setdefault(step.f, step)
        inv = Op(index=0, time=0, type=INVOKE, process=0, f=step.f, key=step.key, value=step.value)
        # told it failed, so a generator that waits on completions moves on
        w.generator.update(ctx, inv, dataclasses.replace(inv, type=FAIL))
    return list(seen.values())


def _outcome(comp: Op) -> str:
    err = f" ({str(comp.error)[:60]})" if comp.error is not None else ""
    return f"{comp.f} {comp.type}{err}"


class Checker:
    """The steps on a real backend (docker, ssh, local): nodes provisioned for this check only."""

    def __init__(self, spec: TestSpec, db: DB, backend: Backend, *, workloads: list[str],
                 timeout: float, store_dir: Path) -> None:
        self.spec = spec
        self.db = db
        self.backend = backend
        self.workloads = workloads
        self.timeout = timeout
        self.caps = capabilities(db)
        self.test = Test(spec=spec, store_dir=store_dir, log=logging.getLogger("jepsen_py.test"),
                         rng=test_rng(spec.seed), backend=backend, db=db)
        self.report = Report(spec.db, spec.backend, sorted(self.caps))
        self.hung: str | None = None  # the hook that did not return: nothing after it is tried

    # ---- helpers ------------------------------------------------------------------------------

    def _try(self, name: str, fn: Callable[[], tuple[bool, str]]) -> bool:
        if self.hung is not None:
            self.report.add(name, None, f"not tried: {self.hung} did not return")
            return False
        try:
            ok, detail = fn()
        except (HookTimedOut, HookExited) as e:
            ok, detail = False, str(e)
        except Exception as e:
            log.debug("db-check %s", name, exc_info=True)
            ok, detail = False, said(e)[:300]
        self.report.add(name, ok, detail)
        return ok

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """One call of a plugin's hook, within --timeout; one that does not return ends the check."""
        try:
            return call_bounded(fn, *args, timeout_s=self.timeout, name=what)
        except HookTimedOut:
            self.hung = self.hung or what
            raise

    def _each(self, fn: Callable[[Test, str], Any], what: str) -> None:
        """`fn` on every node at once, within one --timeout; the first failure raised."""
        failed = each_node(fn, self.test, self.spec.nodes, timeout_s=self.timeout, name=what)
        stuck = sorted(n for n, e in failed.items() if isinstance(e, HookTimedOut))
        if stuck:
            self.hung = self.hung or what
            raise HookTimedOut(f"{what} did not return within {self.timeout:g} s on {', '.join(stuck)} "
                               "(left behind)")
        if failed:
            raise sorted(failed.items())[0][1]

    def _wait(self, cond: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            time.sleep(0.2)
        return cond()

    def _status(self, node: str) -> Any:
        """The node's status, checked (BadInput for what is no status); None when it did not answer
        (or raised); HookTimedOut when it did not return within --timeout."""
        def ask() -> Any:
            try:
                answer = self.db.status(self.test, node)  # type: ignore[attr-defined]
            except BaseException as e:  # on a thread of its own: SystemExit too is the DB's own
                log.debug("status(%s) raised %s", node, said(e))
                return None
            return checked_status(answer, node, "status()")

        return self._call(f"status(test, {node!r})", ask)

    def _primaries(self) -> list[str]:
        """Who claims to lead, checked (BadInput for what is no list of the test's nodes); [] when
        primaries() raised."""
        try:
            return primaries_of(self.db, self.test, list(self.spec.nodes), timeout_s=self.timeout,
                                log_raise=lambda e: log.debug("primaries() raised %s", said(e)))
        except HookTimedOut:
            self.hung = self.hung or "primaries()"
            raise

    # ---- the steps ----------------------------------------------------------------------------

    def run(self) -> Report:
        caps = ", ".join(sorted(self.caps)) or "none"
        self.report.add("capabilities", True, f"{caps}; workloads: {', '.join(self.workloads) or 'none'}")
        provisioned = False
        set_up = False
        try:
            provisioned = self._try("provision", self._provision)
            baseline = self._footprint() if provisioned else {}
            set_up = provisioned and self._try("setup", self._setup)
            if set_up:
                self._capability_steps()
            if provisioned:
                self.hung = None  # teardown is tried whatever did not return
                self._try("teardown", lambda: self._teardown(baseline))
        finally:
            if provisioned:
                try:
                    self.backend.teardown(self.test)
                except Exception as e:
                    self.report.add("backend teardown", False, f"{type(e).__name__}: {e}")
        if not set_up:
            for name in ("primaries", "status", "log files", *(f"workload {w}" for w in self.workloads),
                         "kill/start", "pause/resume"):
                self.report.add(name, None, "not reached: setup did not complete")
        return self.report

    def _capability_steps(self) -> None:
        if "primaries" in self.caps:
            self._try("primaries", self._check_primaries)
        else:
            self.report.add("primaries", None, "not declared: leaderless (no leader waits or "
                                               "leader-targeted faults)")
        if "status" in self.caps:
            self._try("status", self._check_status)
        else:
            self.report.add("status", None, "not declared: no observer samples")
        self._try("log files", self._check_logs)
        for w in self.workloads:
            self._try(f"workload {w}", lambda w=w: self._check_workload(w))
        if "process" in self.caps:
            self._try("kill/start", lambda: self._fault("kill", "start"))
        else:
            self.report.add("kill/start", None, "not declared (--nemesis kill is refused)")
        if "pause" in self.caps:
            self._try("pause/resume", lambda: self._fault("pause", "resume"))
        else:
            self.report.add("pause/resume", None, "not declared (--nemesis pause is refused)")

    def _provision(self) -> tuple[bool, str]:
        remotes = dict(self.backend.setup(self.test) or {})
        self.test.remotes = remotes
        missing = [n for n in self.spec.nodes if n not in remotes]
        if missing:
            return False, f"no remote for {', '.join(missing)}"
        ports = list(getattr(self.db, "ports", None) or [])
        return True, (f"{len(remotes)} nodes on {self.spec.backend}; client ports "
                      f"{', '.join(map(str, ports)) or 'none declared'}")

    def _setup(self) -> tuple[bool, str]:
        self._each(self.db.setup, "setup")
        return True, f"set up on {', '.join(self.spec.nodes)}"

    def _check_primaries(self) -> tuple[bool, str]:
        found: list[str] = []

        def some() -> bool:
            found[:] = self._primaries()
            return bool(found)

        if not self._wait(some):
            return False, f"no node named as primary within {self.timeout:g} s"
        return True, f"{', '.join(found)}"

    def _check_status(self) -> tuple[bool, str]:
        views: dict[str, Any] = {}
        problems = []
        for n in self.spec.nodes:
            try:
                views[n] = self._status(n)
            except BadInput as e:
                problems.append(f"{n}: {e}")
        for n, v in views.items():
            if v is None:
                problems.append(f"{n} did not answer")
                continue
            lacking = [k for k in ("role", "term", "leader") if k not in v]
            if lacking:
                problems.append(f"{n} lacks {', '.join(lacking)}")
            term = v.get("term")
            if term is not None and (not isinstance(term, int) or isinstance(term, bool)):
                problems.append(f"{n}'s term is {type(term).__name__}, not an int or None")
        if problems:
            return False, "; ".join(problems)
        roles = sorted({str(v.get("role")) for v in views.values()})
        odd = [r for r in roles if r not in ROLES]
        lacking_applied = sorted(n for n, v in views.items() if not isinstance(v.get("applied"), int))
        detail = f"roles {', '.join(roles)}"
        if all(v.get("term") is None for v in views.values()):
            detail += "; no terms (term None)"
        if odd:
            detail += f"; roles outside {'/'.join(ROLES)}: {', '.join(odd)}"
        if not lacking_applied:
            detail += "; applied given (the stuck-replica check reads it)"
        elif len(lacking_applied) == len(views):
            detail += "; no applied index (the stuck-replica check skips this DB)"
        else:
            detail += f"; no applied index from {', '.join(lacking_applied)} now"
        return True, detail

    def _check_logs(self) -> tuple[bool, str]:
        missing = []
        count = 0
        for n in self.spec.nodes:
            paths = self._call(f"log_files(test, {n!r})",
                               lambda n=n: list(self.db.log_files(self.test, n) or []))
            for path in paths:
                count += 1
                if self.test.remotes[n].exec(["test", "-e", str(path)], check=False).exit_code != 0:
                    missing.append(f"{n}:{path}")
        if missing:
            return False, f"missing: {', '.join(missing)}"
        return True, f"{count} files, all present" if count else "none named"

    def _client_node(self) -> str:
        if "primaries" in self.caps:
            p = self._primaries()
            if p:
                return p[0]
        return self.spec.nodes[0]

    def _check_workload(self, workload: str) -> tuple[bool, str]:
        templates = self._call(f"the {workload} generator", first_ops, self.spec, workload,
                               list(self.spec.nodes))
        if not templates:
            return False, "its generator gave no op"
        node = self._client_node()
        template = self._call(f"client({workload!r})", self.db.client, workload)
        client = self._call(f"open(test, {node!r})", template.open, self.test, node)
        results = []
        good = True
        try:
            for i, t in enumerate(templates):
                inv = Op(index=i, time=0, type=INVOKE, process=0, f=t.f, key=t.key, value=t.value,
                         node=t.node, meta=dict(t.meta))
                comp = self._call(f"invoke({t.f})", client.invoke, self.test,
                                  dataclasses.replace(inv, meta=dict(inv.meta)))
                if not isinstance(comp, Op) or comp.type not in (OK, FAIL, INFO):
                    return False, f"invoke({t.f}) returned {type(comp).__name__}, not a completed Op"
                results.append(_outcome(comp))
                good = good and comp.type != INFO
        finally:
            if self.hung is None:
                self._call("close(test)", client.close, self.test)
        detail = f"on {node}: " + ", ".join(results)
        return good, detail + ("" if good else " (info: no answer, so nothing is known)")

    def _answers(self, node: str) -> bool:
        if "status" in self.caps:
            return self._status(node) is not None
        return True

    def _fault(self, do: str, undo: str) -> tuple[bool, str]:
        primaries = self._primaries() if "primaries" in self.caps else []
        others = [n for n in self.spec.nodes if n not in primaries]
        victim = others[-1] if others else self.spec.nodes[-1]
        self._call(f"{do}(test, {victim!r})", getattr(self.db, do), self.test, victim)
        silent = self._wait(lambda: not self._answers(victim)) if "status" in self.caps else None
        self._call(f"{undo}(test, {victim!r})", getattr(self.db, undo), self.test, victim)
        back = self._wait(lambda: self._answers(victim))
        if silent is False:
            return False, f"{victim} still answered status after {do}"
        if not back:
            return False, f"{victim} did not answer within {self.timeout:g} s of {undo}"
        seen = "stopped answering, " if silent else ""
        return True, f"{victim}: {seen}answered again after {undo}"

    def _footprint(self) -> dict[str, tuple[set[int], set[str]]]:
        """Per node: its listening TCP ports and running processes (none on the local backend,
        whose nodes share this host's processes)."""
        out = {}
        for n, r in self.test.remotes.items():
            out[n] = (_listening(r), _processes(r))
        return out

    def _teardown(self, baseline: dict[str, tuple[set[int], set[str]]]) -> tuple[bool, str]:
        self._each(self.db.teardown, "teardown")
        left = []
        for n, (ports0, procs0) in baseline.items():
            ports, procs = self._after(n, ports0, procs0)
            if ports:
                left.append(f"{n} still listens on {', '.join(map(str, sorted(ports)))}")
            if procs:
                left.append(f"{n} still runs {'; '.join(p[:80] for p in sorted(procs))}")
        if left:
            return False, "; ".join(left)
        return True, "no listening port or process left behind"

    def _after(self, node: str, ports0: set[int], procs0: set[str]) -> tuple[set[int], set[str]]:
        """What `node` listens on and runs beyond its baseline, given a few seconds to go: a killed
        daemon's socket closes a moment after the signal."""
        remote = self.test.remotes[node]
        deadline = time.monotonic() + 5
        while True:
            ports, procs = _listening(remote) - ports0, _processes(remote) - procs0
            if (not ports and not procs) or time.monotonic() > deadline:
                return ports, procs
            time.sleep(0.2)


def _listening(remote: Remote) -> set[int]:
    """Listening TCP ports on the node, from /proc/net/tcp{,6} (no ss or netstat needed)."""
    res = remote.exec(["cat", "/proc/net/tcp", "/proc/net/tcp6"], check=False)
    ports = set()
    for line in res.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) > 3 and parts[3] == "0A" and ":" in parts[1]:
            try:
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
            except ValueError:
                continue
    return ports


def _processes(remote: Remote) -> set[str]:
    """Live processes' command lines (zombies, which a container's pid 1 may never reap, left out)."""
    if getattr(remote, "netns", None) is not None:
        return set()
    res = remote.exec(["ps", "-eo", "stat=,args="], check=False)
    out = set()
    for line in res.stdout.splitlines():
        stat, _, args = line.strip().partition(" ")
        args = args.strip()
        if stat.startswith("Z") or not args or args.startswith("ps -eo"):
            continue
        out.add(args)
    return out


def check_real(spec: TestSpec, *, workloads: list[str] | None, timeout: float) -> Report:
    """The steps on a real backend for the DB spec.db names."""
    db = load_db(spec.db, spec)
    known = sorted(builtin_workloads())
    chosen = workloads or claimed_workloads(db, spec, known, timeout_s=min(timeout, DECLARATION_S))
    backend = get_backend(spec.backend, spec)
    with tempfile.TemporaryDirectory(prefix="jepsen-py-db-check-") as tmp:
        return Checker(spec, db, backend, workloads=chosen, timeout=timeout, store_dir=Path(tmp)).run()


def check_sim(spec: TestSpec, *, workloads: list[str] | None, time_limit: float = 8.0) -> Report:
    """Our cluster in the simulator: a short run of each workload under kill and pause faults, each
    step read from its history (nothing is provisioned, so nothing can be left behind). Each run is
    assembled and run as `jepsen-py run` would (jepsen_py.assembly), in the backend kind's world."""
    if backend_kind(spec.backend).run_function() is None:
        raise BadInput(f"--backend {spec.backend}: it runs no test of its own in this process")
    db = RaftMetadataDB(spec)
    known = sorted(builtin_workloads())
    chosen = workloads or claimed_workloads(db, spec, known)
    report = Report(spec.db, spec.backend, sorted(capabilities(db)))
    report.add("capabilities", True, f"{', '.join(report.capabilities)}; workloads: {', '.join(chosen)}")
    report.add("provision", True, f"{len(spec.nodes)} simulated nodes in this process")
    samples: list[Op] = []
    nemesis_ops: list[Op] = []
    setup_ok = True
    with tempfile.TemporaryDirectory(prefix="jepsen-py-db-check-") as tmp:
        for w in chosen:
            s = dataclasses.replace(spec, workload=w, nemesis=["kill", "pause"], time_limit=time_limit,
                                    nemesis_interval=1.0, concurrency=2, rate=50.0, name=f"db-check-{w}",
                                    results_dir=Path(tmp), options=dict(spec.options))
            try:
                outcome = assembly.run(assembly.assemble(s))  # as `jepsen-py run` puts a test together
            except BadInput as e:
                report.add(f"workload {w}", False, str(e))
                continue
            if outcome.error or "main" not in outcome.phases:
                setup_ok = False
                report.add(f"workload {w}", False, f"the run failed: {outcome.error}")
                continue

            history = read_history(Path(outcome.run_dir) / "history.jsonl")
            samples += [op for op in history if op.process == "observer"]
            nemesis_ops += [op for op in history if op.process == "nemesis" and op.type == INFO]
            by_f: dict[str, dict[str, int]] = {}
            for op in history:
                if isinstance(op.process, int) and op.type != INVOKE:
                    by_f.setdefault(op.f, {}).setdefault(op.type, 0)
                    by_f[op.f][op.type] += 1
            lacking = [f for f, c in by_f.items() if not c.get(OK)]
            detail = ", ".join(f"{f} {c.get(OK, 0)} ok" for f, c in sorted(by_f.items()))
            report.add(f"workload {w}", bool(by_f) and not lacking,
                       detail + (f"; never ok: {', '.join(lacking)}" if lacking else ""))
    report.steps.insert(2, Step("setup", setup_ok, "every run reached its main phase" if setup_ok
                                else "a run did not reach its main phase"))
    answered = [op for op in samples if op.type == OK and isinstance(op.value, dict)]
    leaders = sorted({str(op.node) for op in answered if op.value.get("role") == "leader"})
    report.add("primaries", bool(leaders), f"leaders seen: {', '.join(leaders) or 'none'}")
    keys_ok = bool(answered) and all(all(k in op.value for k in ("role", "term", "leader", "applied"))
                                     for op in answered)
    report.add("status", keys_ok, f"{len(answered)} samples with role, term, leader and applied"
               if keys_ok else "samples lack role, term, leader or applied")
    report.add("log files", None, "in process: the simulated nodes' logs are the run's node.log")
    for do, undo in (("kill", "start"), ("pause", "resume")):
        done = {op.f for op in nemesis_ops if op.error is None}
        ok = do in done and undo in done
        report.add(f"{do}/{undo}", ok, f"{do} and {undo} carried out by the nemesis" if ok
                   else f"no clean {do} and {undo} in the runs' nemeses")
    report.add("teardown", None, "in process: nothing outside it to leave behind")
    return report
