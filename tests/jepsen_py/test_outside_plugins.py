"""A plugin package outside the repository runs its own DB, workload, nemesis and checker with
`jepsen-py run`, found from the current directory (MODULE:NAME) or by installed entry points,
combined with the built-in nemeses, and every wrong reference is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jepsen_py.errors import BadInput
from jepsen_py.generator import simulate, time_limit
from jepsen_py.plugins import build_nemesis, build_workload
from tests.jepsen_py.fakes import make_spec

JEPSEN_PY = Path(sys.executable).parent / "jepsen-py"
REPO = Path(__file__).resolve().parents[2]

PLUGIN = '''
"""A counter service, its workload, two faults and a checker: a jepsen-py plugin."""

import dataclasses
import threading

from jepsen_py.generator import fn
from jepsen_py.history import FAIL, OK
from jepsen_py.workload import Workload


class CounterDB:
    def __init__(self, spec):
        self.lock = threading.Lock()
        self.value = 0
        self.frozen = False

    def setup(self, test, node): pass
    def teardown(self, test, node): pass
    def start(self, test, node): pass
    def kill(self, test, node): pass
    def pause(self, test, node): pass
    def resume(self, test, node): pass
    def primaries(self, test): return list(test.nodes[:1])
    def status(self, test, node): return None
    def log_files(self, test, node): return []
    def client(self, workload): return CounterClient(self)


class CounterClient:
    def __init__(self, db):
        self.db = db

    def open(self, test, node): return CounterClient(self.db)
    def close(self, test): pass

    def invoke(self, test, op):
        with self.db.lock:
            if self.db.frozen:
                return dataclasses.replace(op, type=FAIL, error="frozen")
            if op.f == "incr":
                self.db.value += 1
                return dataclasses.replace(op, type=OK)
            return dataclasses.replace(op, type=OK, value=self.db.value)


def counter(spec):
    return Workload(name="counter", generator=fn(lambda ctx: {"f": ctx.rng.choice(["incr", "get"])}),
                    final_generator=None, checkers=[])


class Freeze:
    """Refuses every op while in force."""
    def __init__(self, spec): pass
    def fs(self): return frozenset({"start-freeze", "stop-freeze"})
    def setup(self, test): pass
    def teardown(self, test): pass
    def heal(self, test): test.db.frozen = False

    def invoke(self, test, op):
        test.db.frozen = op.f == "start-freeze"
        return dataclasses.replace(op, type="info", value="frozen" if test.db.frozen else "thawed")


class Amnesia:
    """Forgets the counter: reads go backwards, which the checker must catch."""
    def __init__(self, spec): pass
    def fs(self): return frozenset({"start-amnesia", "stop-amnesia"})
    def setup(self, test): pass
    def teardown(self, test): pass
    def heal(self, test): pass

    def invoke(self, test, op):
        if op.f == "start-amnesia":
            with test.db.lock:
                test.db.value = 0
        return dataclasses.replace(op, type="info")


class Monotonic:
    name = "monotonic"

    def check(self, test, history):
        last, bad = -1, []
        for op in history:
            if op.f == "get" and op.type == "ok":
                if op.value < last:
                    bad.append(op.index)
                last = max(last, op.value)
        return {"valid": not bad,
                "anomalies": [{"kind": "decrease", "ops": bad, "explanation": "the counter went back"}]
                if bad else []}


def monotonic(spec):
    return Monotonic()


class NotANemesis:
    def __init__(self, spec): pass
'''

ENTRY_POINTS = {
    "jepsen_py.db": {"counterdb": "myplug:CounterDB"},
    "jepsen_py.workload": {"counter": "myplug:counter"},
    "jepsen_py.nemesis": {"freeze": "myplug:Freeze", "amnesia": "myplug:Amnesia"},
    "jepsen_py.checker": {"monotonic": "myplug:monotonic"},
}


def write_plugin(root: Path) -> Path:
    (root / "myplug").mkdir(parents=True)
    (root / "myplug" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    return root


def install(root: Path, site: Path) -> None:
    """The plugin as an installer lays it out: the package plus a .dist-info whose
    entry_points.txt registers it (importlib.metadata finds it on the path)."""
    write_plugin(site)
    info = site / "myplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n")
    lines = []
    for group, eps in ENTRY_POINTS.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def jepsen_run(cwd: Path, results: Path, *args: str, pythonpath: Path | None = None
               ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    argv = [str(JEPSEN_PY), "run", "--backend", "none", "--node-count", "3", "--time-limit", "1.5",
            "--nemesis-interval", "0.3", "--rate", "300", "--recovery-timeout", "0", "--seed", "3",
            "--no-progress", "--results-dir", str(results), *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def only_run(results: Path) -> Path:
    runs = [p for d in results.iterdir() if d.name != "latest" for p in d.iterdir() if p.name != "latest"]
    assert len(runs) == 1, runs
    return runs[0]


@pytest.fixture(scope="module")
def console_script() -> Path:
    if not JEPSEN_PY.exists():
        pytest.fail(f"the jepsen-py console script is not installed at {JEPSEN_PY}")
    return JEPSEN_PY


def test_references_from_the_current_directory(tmp_path: Path, console_script: Path) -> None:
    plugin = write_plugin(tmp_path / "proj")
    res = jepsen_run(plugin, tmp_path / "results", "--db", "myplug:CounterDB",
                     "--workload", "myplug:counter", "--nemesis", "myplug:Freeze",
                     "--checker", "myplug:monotonic")
    assert res.returncode == 0, res.stdout + res.stderr
    run = only_run(tmp_path / "results")
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True
    assert results["checkers"]["monotonic"]["valid"] is True
    ops = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert any(o["f"] == "start-freeze" and o["process"] == "nemesis" for o in ops)
    assert any(o["type"] == "fail" and o["error"] == "frozen" for o in ops)
    assert any(o["f"] == "get" and o["type"] == "ok" for o in ops)
    assert (run / "timeline.html").exists()  # pictures by default
    # A stored run of an outside workload is re-checked with the same outside checkers.
    (run / "results.json").unlink()
    again = subprocess.run([str(JEPSEN_PY), "analyze", "--no-render", str(run)], cwd=plugin,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((run / "results.json").read_text())["checkers"]["monotonic"]["valid"] is True


def test_installed_entry_points_and_a_failing_verdict(tmp_path: Path, console_script: Path) -> None:
    site = tmp_path / "site"
    install(tmp_path, site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = jepsen_run(elsewhere, tmp_path / "results", "--db", "counterdb", "--workload", "counter",
                     "--nemesis", "freeze,amnesia", "--checker", "monotonic", pythonpath=site)
    assert res.returncode == 1, res.stdout + res.stderr
    results = json.loads((only_run(tmp_path / "results") / "results.json").read_text())
    assert results["checkers"]["monotonic"]["valid"] is False
    assert results["checkers"]["monotonic"]["anomalies"][0]["kind"] == "decrease"


def test_a_module_outside_the_current_directory_is_not_found(tmp_path: Path, console_script: Path) -> None:
    write_plugin(tmp_path / "proj")
    other = tmp_path / "other"
    other.mkdir()
    res = jepsen_run(other, tmp_path / "results", "--db", "myplug:CounterDB", "--workload", "counter")
    assert res.returncode == 254
    # the DB is loaded first (its declared settings judge --db-option and --read-mode), and its
    # module is not importable from here
    assert res.stderr.strip().splitlines() == ["jepsen-py: --db: no module named 'myplug'"]


@pytest.mark.parametrize(("args", "message"), [
    (["--workload", "myplug:nope"], "--workload: module 'myplug' has no 'nope'"),
    (["--nemesis", "myplug:NotANemesis"], "--nemesis: myplug:NotANemesis lacks the Nemesis methods"),
    (["--nemesis", "bogus"], "--nemesis: unknown nemesis 'bogus'"),
    (["--checker", "myplug:Freeze"], "--checker: myplug:Freeze(spec) returned Freeze, which has no check()"),
    (["--workload", "myplug:monotonic"], "returned Monotonic, not a jepsen_py.workload.Workload"),
])
def test_bad_references_are_one_line(tmp_path: Path, console_script: Path, args: list[str],
                                     message: str) -> None:
    plugin = write_plugin(tmp_path / "proj")
    base = {"--workload": "myplug:counter", "--db": "myplug:CounterDB"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    res = jepsen_run(plugin, tmp_path / "results", *[x for kv in base.items() for x in kv])
    assert res.returncode == 254, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_outside_nemeses_combine_with_the_built_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(write_plugin(tmp_path / "proj")))
    spec = make_spec(tmp_path, nemesis=["partition-one", "myplug:Freeze"], nemesis_interval=1.0)
    nemesis, schedule = build_nemesis(spec.nemesis, spec)
    assert {"start-partition", "stop-partition", "start-freeze", "stop-freeze"} <= set(nemesis.fs())
    fs = [o.template.f for o in simulate(time_limit(20, schedule), concurrency=0, nemesis_thread=True)]
    assert {"start-partition", "stop-partition", "start-freeze", "stop-freeze"} <= set(fs)


def test_outside_generator_and_checkers_join_a_built_in_workload(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_plugin(tmp_path / "proj")
    (root / "gens.py").write_text("def reads(spec):\n    return {'f': 'read', 'key': 'r0'}\n")
    monkeypatch.syspath_prepend(str(root))
    spec = make_spec(tmp_path, options={"generator": "gens:reads", "checkers": ["myplug:monotonic"]})
    w = build_workload(spec, None)
    assert w.name == "register" and w.checkers[-1].name == "monotonic"
    assert [o.template.f for o in simulate(w.generator, concurrency=2)] == ["read"]
    with pytest.raises(BadInput, match="--generator: no module named 'nosuch'"):
        build_workload(make_spec(tmp_path, options={"generator": "nosuch:g"}), None)


#: The example of docs/plugins.md: a nemesis that declares its fault, so windows, availability and
#: the pictures read it as they read a built-in pause.
DECLARED = '''
"""Freezes one random node (the DB's pause) until thawed, and says so in the fault vocabulary."""

import dataclasses

from jepsen_py.nemeses.faults import PAUSE, FaultKind


class Freeze:
    def __init__(self, spec):
        self.frozen = []

    def fs(self):
        return frozenset({"freeze", "thaw"})

    def faults(self):
        return [FaultKind("freeze", starts=frozenset({"freeze"}), stops=frozenset({"thaw"}),
                          effects=frozenset({PAUSE}))]

    def needs(self):
        return {"pause": "--nemesis freezer:Freeze"}

    def setup(self, test):
        pass

    def invoke(self, test, op):
        if op.f == "freeze":
            node = test.rng.choice(test.nodes)
            test.db.pause(test, node)
            self.frozen.append(node)
            return dataclasses.replace(op, type="info", value={"nodes": [node]})
        thawed, self.frozen = self.frozen, []
        for node in thawed:
            test.db.resume(test, node)
        return dataclasses.replace(op, type="info", value={"nodes": thawed})

    def heal(self, test):
        for node in self.frozen:
            test.db.resume(test, node)
        self.frozen = []

    def teardown(self, test):
        pass
'''


def test_an_outside_nemesis_declares_its_faults(tmp_path: Path, console_script: Path) -> None:
    from jepsen_py.checkers.pictures.runview import load_run
    from jepsen_py.nemeses.faults import PAUSE, fault_windows

    from jepsen_py.history import read_history

    plugin = write_plugin(tmp_path / "proj")
    (plugin / "freezer.py").write_text(textwrap.dedent(DECLARED))
    res = jepsen_run(plugin, tmp_path / "results", "--db", "myplug:CounterDB",
                     "--workload", "myplug:counter", "--nemesis", "freezer:Freeze", pythonpath=REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    run = only_run(tmp_path / "results")
    history = read_history(run / "history.jsonl")
    # scheduled from its declaration (no generator, no start-/stop- names): freeze, thaw, ...
    nem = [o for o in history if o.process == "nemesis" and o.type == "info" and o.f != "heal"]
    assert [o.f for o in nem][:2] == ["freeze", "thaw"], [o.f for o in nem]
    # the stored history alone says what each fault was and whom it hit
    windows = fault_windows(history, nodes=["n1", "n2", "n3"])
    assert windows and all(w.kind is not None and w.kind.effects == {PAUSE} and w.silences
                           for w in windows)
    assert all(w.targets is not None and len(w.targets) == 1 for w in windows)
    assert all(w.end is not None for w in windows)  # each thawed (or healed)
    assert {w.kind for w in load_run(run).faults} == {"freeze"}  # the pictures' bands


BROKEN = {
    "broken_syntax.py": "def f(:\n",
    "raising_import.py": "raise RuntimeError('import boom')\n",
    "needs_dep.py": "import no_such_dependency_xyz\n",
    "exiting.py": "import sys\nsys.exit(3)\n",
    "ctor.py": textwrap.dedent('''
        class DB:
            def __init__(self, spec):
                raise ValueError("ctor boom")

        class Nem:
            def __init__(self, spec):
                raise OSError("no device")

        def checker(spec):
            raise KeyError("chk")

        def gen(spec):
            raise ZeroDivisionError("gen boom")

        def wl(spec):
            raise RuntimeError("wl boom\\nsecond line")
        '''),
}


@pytest.mark.parametrize(("flag", "ref", "message"), [
    ("--db", "broken_syntax:DB", "--db: broken_syntax:DB: importing broken_syntax raised SyntaxError: "
                                 "invalid syntax (broken_syntax.py, line 1)"),
    ("--workload", "raising_import:w", "--workload: raising_import:w: importing raising_import raised "
                                       "RuntimeError: import boom"),
    ("--nemesis", "needs_dep:N", "--nemesis: needs_dep:N: importing needs_dep failed: it needs the module "
                                 "'no_such_dependency_xyz', which is not installed"),
    ("--checker", "exiting:c", "--checker: exiting:c: importing exiting raised SystemExit: 3"),
    ("--db", "ctor:DB", "--db: ctor:DB: ctor:DB(spec) raised ValueError: ctor boom"),
    ("--nemesis", "ctor:Nem", "--nemesis: ctor:Nem: ctor:Nem(spec) raised OSError: no device"),
    ("--checker", "ctor:checker", "--checker: ctor:checker: ctor:checker(spec) raised KeyError: 'chk'"),
    ("--generator", "ctor:gen", "--generator: ctor:gen: ctor:gen(spec) raised ZeroDivisionError: gen boom"),
    ("--workload", "ctor:wl", "--workload: ctor:wl: ctor:wl(spec) raised RuntimeError: wl boom second line"),
])
def test_broken_plugins_are_one_line_naming_them(tmp_path: Path, flag: str, ref: str, message: str) -> None:
    """A plugin that does not import (syntax error, missing dependency, an exception or exit at
    import) or whose constructor raises: one line naming it and what it raised, 254, no traceback."""
    proj = tmp_path / "proj"
    proj.mkdir()
    for name, text in BROKEN.items():
        (proj / name).write_text(text)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "jepsen_py.cli", "run", "--backend", "none", "--node-count", "3",
            "--time-limit", "1", "--recovery-timeout", "0", "--no-progress", "--results-dir",
            str(tmp_path / "results"), flag, ref]
    res = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 254, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [f"jepsen-py: {message}"]


BAD_GENERATORS = textwrap.dedent('''
    """Generators that hand out what is not an op, for a run to refuse naming them."""

    from jepsen_py.generator import Generator, fn, sleep
    from jepsen_py.workload import Workload


    def none_f(spec):
        return {"f": None}


    class NotAnOp(Generator):
        def op(self, ctx):
            return 42


    def not_an_op(spec):
        return NotAnOp()


    def late_none_f(spec):
        """Good ops for a while, then one with f=None: only the run can see it."""
        n = iter(range(10**9))
        return fn(lambda ctx: {"f": "get"} if next(n) < 20 else {"f": None})


    def raises(spec):
        def step(ctx):
            raise RuntimeError("boom in the generator")
        return step


    def workload(spec):
        return Workload(name="bad", generator=fn(lambda ctx: {"f": "incr", "node": 7}), final_generator=None,
                        checkers=[])


    class BadNemesis:
        def __init__(self, spec): pass
        def fs(self): return frozenset({"start-x", "stop-x"})
        def setup(self, test): pass
        def teardown(self, test): pass
        def heal(self, test): pass
        def invoke(self, test, op): return op
        def generator(self, spec): return [sleep(0.5), {"f": ""}]
    ''')


LATE = ("--generator: badgens:late_none_f: its generator gave an op with f=None "
        "(an op's f is a non-empty name)")


@pytest.mark.parametrize(("backend", "args", "message"), [
    ("none", ["--generator", "badgens:none_f"],
     "--generator: badgens:none_f: its generator gave an op with f=None (an op's f is a non-empty name)"),
    ("none", ["--generator", "badgens:late_none_f"], LATE),
    ("none", ["--generator", "badgens:not_an_op"],
     "--generator: badgens:not_an_op: its generator gave 42, which is not an op (a template or dict with an "
     "'f', a Pending, or None to end)"),
    ("none", ["--generator", "badgens:raises"],
     "--generator: badgens:raises: its generator raised RuntimeError: boom in the generator"),
    ("none", ["--workload", "badgens:workload"],
     "--workload: badgens:workload: its generator gave an op with node=7 (a node is named by a string)"),
    ("none", ["--nemesis", "badgens:BadNemesis"],
     "--nemesis: badgens:BadNemesis: its generator gave an op with f='' (an op's f is a non-empty name)"),
    ("sim", ["--generator", "badgens:not_an_op"],
     "--generator: badgens:not_an_op: its generator gave 42, which is not an op (a template or dict with an "
     "'f', a Pending, or None to end)"),
    ("sim", ["--generator", "badgens:late_none_f"], LATE),
])
def test_a_plugin_generator_handing_out_what_is_not_an_op(tmp_path: Path, backend: str, args: list[str],
                                                          message: str) -> None:
    """Seen only when the run asks for the op, mid-run: the run stops, is stored, and the command says
    what the plugin did on one line, 254 (the plugin is at fault, not jepsen-py). The bad op never
    reaches the history."""
    proj = write_plugin(tmp_path / "proj")
    (proj / "badgens.py").write_text(BAD_GENERATORS)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(REPO)}
    plug = ["--db", "myplug:CounterDB", "--workload", "myplug:counter"] if backend == "none" else []
    for flag in args[::2]:
        if flag in plug:
            del plug[plug.index(flag):plug.index(flag) + 2]
    argv = [sys.executable, "-m", "jepsen_py.cli", "run", "--backend", backend, "--node-count", "3",
            "--time-limit", "3", "--nemesis-interval", "0.3", "--rate", "50", "--recovery-timeout", "0",
            "--seed", "3", "--no-progress", "--results-dir", str(tmp_path / "results"), *plug, *args]
    res = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 254, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"jepsen-py: {message} (run stored in "), lines
    history = only_run(tmp_path / "results") / "history.jsonl"
    ops = [json.loads(line) for line in history.read_text().splitlines()]
    assert all(isinstance(o["f"], str) and o["f"] for o in ops)
