"""Loading a user's DB by `--db module:Name`: found, instantiated with the spec, and one line when not;
and what the run makes of its declarations and answers, whatever they are: one line (254) or an
outcome it can go on with."""

from __future__ import annotations

import logging
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jepsen_py.errors import BadInput
from jepsen_py.history import Op, parse_line
from jepsen_py.observer import Observer
from jepsen_py.observer import sample as observer_sample
from jepsen_py.plugins import HookTimedOut, db_option_keys, load_db, load_object, primaries_of, read_modes
from jepsen_py.protocols import Test
from tests.jepsen_py import hostile
from tests.jepsen_py.fakes import FakeDB, make_spec


def test_loads_and_instantiates_with_the_spec(tmp_path: Path) -> None:
    db = load_db("tests.jepsen_py.fakes:FakeDB", make_spec(tmp_path))
    assert isinstance(db, FakeDB)


def test_dotted_attributes() -> None:
    assert load_object("os:path.join", option="--db") is __import__("os").path.join


@pytest.mark.parametrize(("ref", "message"), [
    ("no_such_module_xyz:DB", "no module named 'no_such_module_xyz'"),
    ("tests.jepsen_py.fakes:Nope", "has no 'Nope'"),
    (":DB", "expected MODULE:CLASS"),
    ("tests.jepsen_py.fakes:", "expected MODULE:CLASS"),
    ("not-an-entry-point", "neither MODULE:CLASS nor an installed"),
    ("tests.jepsen_py.fakes:Calls", r"cannot construct .*Calls\(spec\)"),
    ("tests.jepsen_py.fakes:Register", "lacks the DB methods"),
])
def test_bad_references_are_one_line(tmp_path: Path, ref: str, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        load_db(ref, make_spec(tmp_path))


class _Raises:
    """A plugin whose every hook raises: what jepsen-py calls on it must name it in one line."""

    def __init__(self, spec: object = None) -> None:
        pass

    def fs(self) -> set[str]:
        raise RuntimeError("fs boom")

    def setup(self, test: object) -> None: ...
    def invoke(self, test: object, op: object) -> object: ...
    def heal(self, test: object) -> None: ...
    def teardown(self, test: object) -> None: ...

    def needs(self) -> dict[str, str]:
        raise RuntimeError("needs boom")

    @staticmethod
    def known_bugs() -> tuple[str, ...]:
        raise RuntimeError("bugs boom")


class _RaisingGenerator(_Raises):
    def generator(self, spec: object) -> object:
        raise ValueError("generator boom")


def test_plugin_hooks_that_raise_are_one_line_naming_the_plugin(tmp_path: Path) -> None:
    from jepsen_py.plugins import build_nemesis, check_capabilities
    from jepsen_py.runflags import check_db_bugs

    spec = make_spec(tmp_path)
    for nemesis, message in ((_Raises(), "--nemesis: _Raises: fs() raised RuntimeError: fs boom"),
                             (_RaisingGenerator(), "--nemesis: _RaisingGenerator: generator(spec) raised "
                                                   "ValueError: generator boom")):
        with pytest.raises(BadInput) as e:
            build_nemesis([nemesis], spec)
        assert str(e.value) == message
    with pytest.raises(BadInput) as e:
        check_capabilities(FakeDB(spec), _Raises(), db_name="fake")
    assert str(e.value) == "--nemesis: _Raises: needs() raised RuntimeError: needs boom"
    with pytest.raises(BadInput) as e:
        check_db_bugs(make_spec(tmp_path, db=f"{__name__}:_Raises", bugs=["x"]))
    assert str(e.value) == f"--db: {__name__}:_Raises: known_bugs() raised RuntimeError: bugs boom"


def test_an_entry_point_whose_module_is_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    info = site / "brokenplug-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "brokenplug.py").write_text("raise ImportError('half installed')\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[jepsen_py.db]\nbroken = brokenplug:DB\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(BadInput) as e:
        load_db("broken", make_spec(tmp_path))
    assert str(e.value) == ("--db: broken (entry point brokenplug:DB): loading it raised ImportError: "
                            "half installed")


class _ClientRaises(FakeDB):
    def client(self, workload: str) -> Any:
        raise ConnectionError("no such service")


def test_a_db_whose_client_raises_is_one_line_before_the_run(tmp_path: Path) -> None:
    from jepsen_py.runner import run_test
    from tests.jepsen_py.fakes import register_workload

    spec = make_spec(tmp_path, db=f"{__name__}:_ClientRaises")
    with pytest.raises(BadInput) as e:
        run_test(spec, db=_ClientRaises(spec), workload=register_workload())
    assert str(e.value) == (f"--db: {__name__}:_ClientRaises: client('register') raised ConnectionError: "
                            f"no such service")
    assert not (tmp_path / "results").exists()


# ---- a DB's declarations and answers that are no answers (tests/jepsen_py/hostile.py) -----------

released = pytest.fixture(hostile.releasing)


@pytest.mark.parametrize(("command", "db", "said"), [
    ("run", "NoOptionsDB", "db_options() returned None, not a dict {key: what it sets}"),
    ("run", "RaisingOptionsDB", "db_options() raised KeyboardInterrupt"),
    ("db-check", "NoOptionsDB", "db_options() returned None, not a dict {key: what it sets}"),
])
def test_db_options_that_are_none_or_raise_are_one_line_before_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, db: str, said: str) -> None:
    """The declaration is read before anything is provisioned: one --db line, 254, no run made (a
    KeyboardInterrupt the declaration raises is its own, on a thread of ours: not a Ctrl-C)."""
    ref = f"{hostile.HERE}:{db}"
    argv = (hostile.run_argv(tmp_path / "results", "--db", ref, "--workload", f"{hostile.HERE}:reads")
            if command == "run" else ["db-check", "--backend", "local", "--db", ref])
    code = hostile.run_cli(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 254
    assert err == [f"jepsen-py: --db: {ref}: {said}"]
    assert not (tmp_path / "results").exists()


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    __repr__ = __str__


class _BadList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("no iterating me")


class _BadDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("no items")


class _Unsayable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


NODES = ["n1", "n2", "n3"]
GARBAGE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
    st.binary(max_size=8),
    st.lists(st.one_of(st.sampled_from(NODES), st.text(max_size=4), st.integers(), st.none()), max_size=5),
    st.tuples(st.sampled_from(NODES)), st.frozensets(st.sampled_from(NODES)),
    st.dictionaries(st.one_of(st.sampled_from(["role", "term", "leader", "applied", "x", "reads"]),
                              st.integers(), st.none()),
                    st.one_of(st.none(), st.integers(), st.text(max_size=10), st.floats(allow_nan=True),
                              st.booleans(), st.lists(st.integers(), max_size=3)), max_size=5),
    st.sampled_from([
        "n1", ["n1", "n1"], ["n9"], list(range(100_000)), "x" * 1_000_000, 10**5000, 2**70, [[[[[]]]]],
        _Unprintable(), [_Unprintable()], {"role": _Unprintable()}, {_Unprintable(): 1}, {"term": 2**70},
        {"applied": True}, {"mood": "x" * 100_000}, {"role": "leader", "term": 3, "leader": "n1"},
        {"reads": "which replicas answer"}, {"bad key": "x"}, ("read-index", "lease"), ["a b"],
        _BadList(["n1"]), _BadDict(role="leader"), iter(["n1"]), {"n1"},
        {"nested": _nested(100)},
    ]))
RAISED = st.sampled_from([ValueError("bad\nvalue"), RuntimeError(), BadInput("its own\nwords"), SystemExit(2),
                          KeyboardInterrupt(), GeneratorExit(), RecursionError("deep"), _Unsayable()])
BEHAVIOUR = st.one_of(st.tuples(st.just("return"), GARBAGE), st.tuples(st.just("raise"), RAISED),
                      st.just(("block", None)))


def _hook(behaviour: tuple[str, Any]) -> Any:
    kind, what = behaviour

    def hook(*args: Any) -> Any:
        if kind == "raise":
            raise what
        if kind == "block":
            hostile.block()
        return what

    return hook


def _one_line(e: BaseException) -> None:
    assert isinstance(e, BadInput) and e.exit_code == 254, repr(e)
    text = str(e)
    assert "\n" not in text and text.startswith("--db: hostile:X: ") and len(text) < 600, text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(hook=st.sampled_from(["status", "primaries", "db_options", "read_modes"]), behaviour=BEHAVIOUR)
def test_hostile_hook_answers_are_one_line_254_or_a_normal_outcome(tmp_path: Path, released: None, hook: str,
                                                                   behaviour: tuple[str, Any]) -> None:
    """Whatever status(), primaries(), db_options() or read_modes() return (garbage of any type,
    huge, unprintable), raise (SystemExit and KeyboardInterrupt too) or however long they block,
    what the run makes of it is one --db line for 254 or an outcome it goes on with: never another
    exception (a 255, a traceback), and never a thread that dies of it."""
    died: list[Any] = []
    old_hook = threading.excepthook
    threading.excepthook = died.append
    try:
        _probe(tmp_path, hook, behaviour)
    finally:
        threading.excepthook = old_hook
    assert not died, died


def _probe(tmp_path: Path, hook: str, behaviour: tuple[str, Any]) -> None:
    kind = behaviour[0]
    db: Any = type("X", (), {hook: staticmethod(_hook(behaviour))})
    if hook in ("db_options", "read_modes"):
        ask = db_option_keys if hook == "db_options" else read_modes
        try:
            got = ask(db, "hostile:X", timeout_s=0.05)
        except BadInput as e:
            _one_line(e)
            return
        assert kind == "return"  # only an answer can pass
        assert isinstance(got, dict if hook == "db_options" else tuple)
        assert all(type(k) is str for k in got)
        assert all(type(v) is str for v in (got.values() if isinstance(got, dict) else got))
        return
    test = Test(spec=make_spec(tmp_path, nodes=NODES), store_dir=tmp_path, log=logging.getLogger("t"),
                rng=random.Random(1), db=db)
    if hook == "primaries":
        try:
            leaders = primaries_of(db, test, NODES, timeout_s=0.05)
        except HookTimedOut:  # the run notes it and waits no more
            assert kind == "block"
            return
        except BadInput as e:
            _one_line(BadInput(f"--db: hostile:X: {e}"))  # as the runner words it
            return
        assert isinstance(leaders, list) and set(leaders) <= set(NODES)
        return
    if kind == "block":  # the observer's thread is left behind at its stop, its samples unharmed
        recorded: list[Op] = []
        obs = Observer(test, db, recorded.append, lambda: 0, interval=0.01, nodes=["n1"], ref="hostile:X")
        obs.start()
        obs.stop(timeout=0.05)
        assert recorded == []
        return
    sample = observer_sample(db, test, "n1", "hostile:X")
    if sample.bad is not None:
        _one_line(sample.bad)
        assert sample.status is None
    elif sample.status is None:  # a fail sample: it did not answer, or raised
        assert sample.error is None or "\n" not in sample.error
    else:  # what the history records and reads back
        line = Op(0, 0, "ok", "observer", "status", value=sample.status, node="n1").to_json()
        assert parse_line(line, where="x").value == sample.status
