"""The backend registry (jepsen_py.backends): names to classes, lazily; backend flags into
spec.options; and the `none` backend (nothing provisioned)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py.backends import BACKENDS, add_backend_arguments, backend_options, get_backend
from jepsen_py.backends.none import NoneBackend
from jepsen_py.errors import BadInput
from jepsen_py.protocols import Backend
from tests.jepsen_py.fakes import make_spec


def test_unknown_backend_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"--backend: unknown backend 'vagrant' .*docker, ssh, local, none"):
        get_backend("vagrant", make_spec(tmp_path))


def test_none_backend_provisions_nothing(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    b = get_backend("none", spec)
    assert isinstance(b, NoneBackend) and isinstance(b, Backend)
    assert b.setup(None) == {}  # type: ignore[arg-type]
    assert b.peer_address("n1") == "n1"
    assert b.client_endpoint("n1", 9092) == ("n1", 9092)
    b.teardown(None)  # type: ignore[arg-type]


def test_every_registered_backend_is_constructed_from_the_spec(tmp_path: Path) -> None:
    """Constructing must not provision anything (that is setup's job): cheap and side-effect free."""
    for name in BACKENDS:
        try:
            b = get_backend(name, make_spec(tmp_path, backend=name))
        except BadInput as e:  # a backend module not in this build yet
            assert "not available" in str(e)
            continue
        assert b.name == name


def test_backends_load_lazily() -> None:
    """Importing the registry pulls in neither the docker SDK nor paramiko (fast --help, and the
    other parts' tests do not depend on them)."""
    code = ("import sys, jepsen_py.backends; "
            "print(any(m in sys.modules for m in ('docker', 'paramiko')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_backend_flags_land_in_options() -> None:
    p = argparse.ArgumentParser()
    add_backend_arguments(p)
    args = p.parse_args([])
    opts = backend_options(args)
    assert isinstance(opts, dict)
    assert all(hasattr(args, k) for k in opts)


def test_remote_signal_docstring_names_exactly_the_signals_accepted():
    import re

    from jepsen_py.backends.common import SIGNALS, check_signal
    from jepsen_py.protocols import Remote

    doc = Remote.signal.__doc__ or ""
    named = set(re.findall(r"\b(?:KILL|STOP|CONT|TERM|INT|HUP|USR1|USR2|QUIT|SEGV|ABRT|ALRM)\b", doc))
    assert named | {"0"} == SIGNALS and '"0"' in doc
    assert all(check_signal(s) == s for s in SIGNALS)
    assert check_signal("sigterm") == "TERM"
    with pytest.raises(ValueError):
        check_signal("SEGV")


def test_the_simulator_is_known_by_what_it_can_do_not_by_its_name() -> None:
    """The registry's kinds carry what callers used to infer from the name "sim": virtual time
    (faults act at once), a run function of its own, a check of the options it refuses."""
    from jepsen_py.backends import KINDS, backend_kind, is_simulated, simulator
    from jepsen_py.sim import backend as sim_backend

    sim = backend_kind(simulator())
    assert sim.simulated and not sim.faults_take_time and sim.run_function() is sim_backend.run
    assert is_simulated(simulator()) and not is_simulated("vagrant")
    for name in ("docker", "ssh", "local", "none"):
        kind = KINDS[name]
        assert not kind.simulated and kind.faults_take_time and kind.run_function() is None
    with pytest.raises(BadInput, match="--ssh-host: not an option of the simulator"):
        sim.check_args(argparse.Namespace(_backend_option_flags={"ssh_host": ("--ssh-host", None)},
                                          ssh_host="h1"))


def test_no_module_outside_the_simulator_and_the_registry_compares_a_backend_with_sim() -> None:
    """Which engine a run gets is the registry's answer (BackendKind), not a string test spread
    over the commands, explore and a nemesis."""
    import re

    root = Path(__file__).resolve().parents[2]
    compare = re.compile(r"""(?:[=!]=\s*["']sim["'])|(?:["']sim["']\s*[=!]=)|(?:\bin\s*\([^)]*["']sim["'])""")
    offenders = []
    for folder in ("jepsen_py", "nemeses", "workloads", "checkers", "spark"):
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("jepsen_py/sim/") or rel == "jepsen_py/backends/__init__.py":
                continue
            offenders += [f"{rel}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1)
                          if compare.search(line)]
    assert offenders == []


def _sim_references(rel: str, source: str) -> list[int]:
    """Lines of `source` (the file `rel`) that import the simulator's package, or name one of its
    modules as a string to load (an importlib reference)."""
    import ast
    import re

    package = rel.removesuffix(".py").split("/")[:-1]  # a module's (or __init__'s) package
    named = re.compile(r"^jepsen_py\.sim(\.\w+)*(:\w+)?$")
    lines = []
    for node in ast.walk(ast.parse(source)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            mod = ".".join(p for p in (base, node.module or "") if p)
            modules = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and named.match(node.value):
            lines.append(node.lineno)
        if any(m == "jepsen_py.sim" or m.startswith("jepsen_py.sim.") for m in modules):
            lines.append(node.lineno)
    return lines


def test_the_scan_for_simulator_imports_sees_every_form() -> None:
    seen = _sim_references("jepsen_py/x.py", "\n".join([
        "import jepsen_py.sim.run",
        "from jepsen_py.sim import matrix",
        "from jepsen_py import sim",
        "from .sim.run import run_sim",
        "from . import sim",
        "REF = 'jepsen_py.sim.run:run_sim'",
        "from jepsen_py.simple import x",
        "from jepsen_py import simulation",
        "DOC = 'the simulator (jepsen_py.sim) runs it'",
    ]))
    assert seen == [1, 2, 3, 4, 5, 6]


def test_no_module_outside_the_simulator_and_the_registry_imports_the_simulator() -> None:
    """Callers ask the chosen backend's kind (its run function, spec check, matrix runner), so
    nothing but the registry knows where the simulator lives."""
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("jepsen_py", "nemeses", "workloads", "checkers", "spark", "cluster"):
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("jepsen_py/sim/") or rel == "jepsen_py/backends/__init__.py":
                continue
            offenders += [f"{rel}:{n}" for n in _sim_references(rel, path.read_text())]
    assert offenders == []


def test_the_simulator_s_kind_offers_its_spec_check_and_matrix(tmp_path: Path) -> None:
    from jepsen_py.backends import KINDS, backend_kind, simulator

    sim = backend_kind(simulator())
    runner = sim.matrix_runner()
    assert runner is not None and callable(runner.run_matrix) and callable(runner.sweep_cells)
    with pytest.raises(BadInput, match="the simulator runs this project's cluster only"):
        sim.check_spec(make_spec(tmp_path, backend=simulator()))  # the fake DB
    for name in ("docker", "ssh", "local", "none"):
        KINDS[name].check_spec(make_spec(tmp_path, backend=name))  # nothing to refuse
        assert KINDS[name].matrix_runner() is None


def test_a_backend_of_your_own_is_named_as_module_and_class(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`--backend MODULE:CLASS` loads from the working directory as every plugin does, its module's
    hooks answer as ours do, and every wrong name is one line."""
    from jepsen_py.backends import backend_kind

    (tmp_path / "toyback_reg.py").write_text(
        "from jepsen_py.backends.none import NoneBackend\n"
        "def timer_slack_s():\n    return 0.25\n"
        "class Toy(NoneBackend):\n    name = 'toy'\n")
    monkeypatch.chdir(tmp_path)
    kind = backend_kind("toyback_reg:Toy")
    assert kind.outside and not kind.simulated and kind.faults_take_time and kind.run_function() is None
    assert kind.timer_slack_s() == 0.25 and kind.timing_seed_key() is None and kind.hosts({}) is None
    assert get_backend("toyback_reg:Toy", make_spec(tmp_path)).name == "toy"
    for ref, said in [("no_such_mod:Toy", "no module named 'no_such_mod'"),
                      ("toyback_reg:Nope", "the module has no class 'Nope'"),
                      ("../x:Toy", "is not a Python module name"), ("vagrant", "unknown backend 'vagrant'")]:
        with pytest.raises(BadInput, match=said) as e:
            backend_kind(ref).backend_class()
        assert "\n" not in str(e.value)


def test_a_backend_of_your_own_takes_the_options_its_module_declares(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "toyback_opts.py").write_text(
        "from jepsen_py.backends.none import NoneBackend\n"
        "OPTIONS = {'zone': 'where its nodes go', 'size': 'how big'}\n"
        "class Toy(NoneBackend):\n    pass\n")
    (tmp_path / "toyback_bad.py").write_text("OPTIONS = ['zone']\nclass Toy:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    p = argparse.ArgumentParser()
    p.add_argument("--backend")
    add_backend_arguments(p)

    def options(*argv: str) -> dict:
        return backend_options(p.parse_args(list(argv)))

    got = options("--backend", "toyback_opts:Toy", "--backend-option", "zone=eu",
                  "--backend-option", "size=3")
    assert got["zone"] == "eu" and got["size"] == "3"
    assert "backend_option" not in got and "backend_option" not in options()  # the pairs, not the list
    for argv, said in [
            (("--backend", "toyback_opts:Toy", "--backend-option", "colour=red"),
             r"toyback_opts:Toy has no option 'colour' \(it takes: size, zone\)"),
            (("--backend", "toyback_opts:Toy", "--backend-option", "zone"), "expected KEY=VALUE, got 'zone'"),
            (("--backend", "toyback_opts:Toy", "--backend-option", "zone=a", "--backend-option", "zone=b"),
             "zone given twice"),
            (("--backend", "docker", "--backend-option", "zone=eu"),
             r"for a backend of your own .*--backend docker takes its own flags"),
            (("--backend-option", "zone=eu",), "for a backend of your own"),
            (("--backend", "toyback_bad:Toy", "--backend-option", "zone=eu"), "OPTIONS must be a dict")]:
        with pytest.raises(BadInput, match=said) as e:
            options(*argv)
        assert "\n" not in str(e.value)
