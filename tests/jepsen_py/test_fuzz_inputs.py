"""Fuzzed bad input: real history files, mutated (torn lines, flipped bytes, missing or mistyped
fields, completions with no invocation, two invocations on one process, NaN and huge times,
binary garbage, deep nesting, a 50 MB line), fed to every importer, `check` and `analyze`; and
fuzzed `run` flags. Every input ends in 0, 1, 2 or 254 with one line naming the file, never a
traceback or 255; bad `run` flags are refused before anything is provisioned.

Two properties over valid and invalid seeds in every format: one damaged field of one line is
refused (254) or changes nothing, and never passes an invalid history; a rewrite that keeps the
meaning (layout, field order, CRLF, shifted times, renumbered processes, another format) keeps the
verdict."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jepsen_py import cli
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.importers import FORMATS, load_history
from tests.anchors import ANCHORS
from tests.jepsen_py import history_formats as hf
from tests.jepsen_py.test_cli import FAKE_DB, REPO, fake_run, use_fakes

OK_CODES = {0, 1, 2, 254}
FUZZ = settings(max_examples=60, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

# Literals that broke readers before: non-finite and huge numbers, wrong types, bad escapes,
# Jepsen-log processes that look numeric, ratios by zero.
WEIRD = ["NaN", "Infinity", "-Infinity", "-1", "1e999", "9" * 5000, "[]", "{}", '"x"', "null", "true",
         "[[[[[[", "\\uZZZZ", '"\\uZZZZ"', "1/0", "--3", "\u00b2", "##NaN", "1e15", "100000000000000000000",
         ":invoke", ":ok", ":info", '{"a":[1,{"b":2}]}', "\x00", "\xff"]


def _register_ops() -> list[dict[str, object]]:
    """A small valid register history with a nemesis and an observer, as our runner writes it."""
    ops: list[dict[str, object]] = []

    def add(typ: str, process: object, f: str, value: object = None) -> None:
        ops.append({"index": len(ops), "time": len(ops) * 1_000_000, "type": typ, "process": process,
                    "f": f, "key": None, "value": value, "node": None, "error": None, "meta": {}})

    for i in range(6):
        p = i % 3
        add("invoke", p, "write", i)
        add("ok", p, "write", i)
        add("invoke", p, "read")
        add("ok", p, "read", i)
        if i == 2:
            add("info", "nemesis", "start-partition", ["n1"])
            add("ok", "observer", "status", {"n1": "leader"})
    return ops


def _edn(ops: list[dict[str, object]]) -> str:
    def v(x: object) -> str:
        if x is None:
            return "nil"
        if isinstance(x, list):
            return "[" + " ".join(v(y) for y in x) + "]"
        if isinstance(x, dict):
            return "{" + " ".join(f"{v(k)} {v(y)}" for k, y in x.items()) + "}"
        return json.dumps(x)

    lines = []
    for o in ops:
        proc = f":{o['process']}" if isinstance(o["process"], str) else str(o["process"])
        lines.append(f"{{:index {o['index']}, :time {o['time']}, :type :{o['type']}, :process {proc}, "
                     f":f :{o['f']}, :value {v(o['value'])}}}")
    return "[" + "\n ".join(lines) + "]\n"


def _seeds() -> list[tuple[str, bytes, str]]:
    """(file name, content, model): ours, an EDN history, and Porcupine's logs when present."""
    ops = _register_ops()
    seeds = [("history.jsonl", ("\n".join(json.dumps(o) for o in ops) + "\n").encode(), "register"),
             ("history.edn", _edn(ops).encode(), "register")]
    for rel, model in (("jepsen/etcd_000.log", "cas-register"), ("kv/c01-ok.txt", "kv")):
        p = ANCHORS / rel
        if p.exists():
            lines = p.read_bytes().splitlines(keepends=True)[:80]
            seeds.append((Path(rel).name, b"".join(lines), model))
    return seeds


SEEDS = _seeds()


@st.composite
def mutations(draw: st.DrawFn) -> list[tuple[str, float, object]]:
    """A few edits, each (kind, where in the file as a fraction, argument)."""
    kind = st.sampled_from(["truncate", "flip", "garbage", "drop_line", "dup_line", "swap_lines",
                            "weird", "deep", "strip_field"])
    edit = st.tuples(kind, st.floats(0, 1, allow_nan=False),
                     st.one_of(st.integers(1, 255), st.binary(min_size=1, max_size=48),
                               st.sampled_from(WEIRD)))
    return draw(st.lists(edit, min_size=1, max_size=4))


def mutate(data: bytes, edits: list[tuple[str, float, object]]) -> bytes:
    for kind, frac, arg in edits:
        pos = int(frac * len(data))
        lines = data.splitlines(keepends=True) or [b""]
        li = min(int(frac * len(lines)), len(lines) - 1)
        if kind == "truncate":
            data = data[:pos]
        elif kind == "flip" and data:
            mask = arg if isinstance(arg, int) else 0x5A
            i = min(pos, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ mask]) + data[i + 1:]
        elif kind == "garbage":
            junk = arg if isinstance(arg, bytes) else os.urandom(16)
            data = data[:pos] + junk + data[pos:]
        elif kind == "drop_line":  # a completion loses its invocation, or an invocation its completion
            data = b"".join(lines[:li] + lines[li + 1:])
        elif kind == "dup_line":  # two invocations on one process, or a completion twice
            data = b"".join([*lines[:li + 1], lines[li], *lines[li + 1:]])
        elif kind == "swap_lines" and li + 1 < len(lines):
            data = b"".join([*lines[:li], lines[li + 1], lines[li], *lines[li + 2:]])
        elif kind == "weird":  # a number or a keyword replaced by a literal that broke readers
            lit = (arg if isinstance(arg, str) else "NaN").encode("utf-8", "surrogatepass")
            line = lines[li]
            for token in (b'"time": ', b":time ", b'"process": ', b":process ", b'"value": ',
                          b":value ", b'"type": ', b":type ", b'"f": ', b":f "):
                at = line.find(token)
                if at >= 0:
                    end = at + len(token)
                    stop = end
                    while stop < len(line) and line[stop:stop + 1] not in b",}\n":
                        stop += 1
                    lines[li] = line[:end] + lit + line[stop:]
                    break
            else:
                lines[li] = line[:len(line) // 2] + lit + line[len(line) // 2:]
            data = b"".join(lines)
        elif kind == "deep":
            data = data[:pos] + b"[" * 5000 + b"]" * 5000 + data[pos:]
        elif kind == "strip_field":
            line = lines[li]
            for token in (b'"time": ', b'"type": ', b'"process": ', b'"f": ', b'"index": ',
                          b":type ", b":process ", b":f "):
                at = line.find(token)
                if at >= 0:
                    stop = line.find(b",", at)
                    lines[li] = line[:at] + (line[stop + 1:] if stop >= 0 else b"}\n")
                    break
            data = b"".join(lines)
    return data


def assert_one_line(code: int, err: str, names: list[str]) -> None:
    assert code in OK_CODES, (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 254:
        lines = [ln for ln in err.splitlines() if ln.startswith("jepsen-py: ") and "warning" not in ln]
        assert len(lines) == 1, err
        assert any(n in lines[0] for n in names), (names, lines[0])


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="jepsen-py-fuzz-") as d:
        yield Path(d)


@FUZZ
@given(seed=st.sampled_from(SEEDS), edits=mutations())
def test_mutated_histories_give_a_verdict_or_one_line(workdir: Path, capsys, seed, edits) -> None:
    name, content, model = seed
    path = workdir / name
    path.write_bytes(mutate(content, edits))
    for fmt in FORMATS:  # every importer: ops or BadInput, nothing else
        try:
            load_history(path, fmt, allow_truncated=True)
        except BadInput as e:
            assert str(e) and "\n" not in str(e)
    capsys.readouterr()
    code = cli.main(["check", str(path), "--model", model, "--workers", "1", "--time-limit", "5"])
    assert_one_line(code, capsys.readouterr().err, [str(path)])


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One real run of the in-process DB, whose history.jsonl and test.json the fuzzer mutates."""
    tmp = tmp_path_factory.mktemp("fuzzrun")
    with pytest.MonkeyPatch.context() as mp:
        use_fakes(mp)
        assert cli.main(fake_run(tmp)) == 0
        yield (tmp / "results" / "latest").resolve()


@settings(FUZZ, max_examples=40)
@given(edits=mutations(), which=st.sampled_from(["history.jsonl", "test.json"]))
def test_analyze_of_a_mutated_run_gives_a_verdict_or_one_line(stored_run: Path, capsys, monkeypatch,
                                                              edits, which) -> None:
    use_fakes(monkeypatch)
    target = stored_run / which
    original = target.read_bytes()
    try:
        target.write_bytes(mutate(original, edits))
        capsys.readouterr()
        code = cli.main(["analyze", str(stored_run), "--no-render", "--allow-truncated"])
        assert_one_line(code, capsys.readouterr().err, [str(target), str(stored_run)])
    finally:
        target.write_bytes(original)


def test_a_50_mb_line(workdir: Path, capsys) -> None:
    ops = _register_ops()
    good = [json.dumps(o) for o in ops]
    huge = {**ops[0], "index": len(ops), "value": "x" * (50 * 1024 * 1024)}
    # A 50 MB garbage line in the middle: refused, naming its line.
    garbage = workdir / "garbage.jsonl"
    garbage.write_text("\n".join([*good[:3], "y" * (50 * 1024 * 1024), *good[3:]]) + "\n")
    capsys.readouterr()
    code = cli.main(["check", str(garbage), "--model", "register", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 254 and f"{garbage}:4:" in err and len(err) < 2000
    # A 50 MB value on a well-formed op: read and checked like any other.
    big = workdir / "big.jsonl"
    big.write_text("\n".join([*good, json.dumps(huge)]) + "\n")
    code = cli.main(["check", str(big), "--model", "register", "--workers", "1"])
    assert_one_line(code, capsys.readouterr().err, [str(big)])
    p = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "check", str(garbage), "--model", "register"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 254 and "Traceback" not in p.stderr and len(p.stderr) < 2000


@pytest.mark.parametrize(("seed", "edits"), [
    (0, [("garbage", 0.5, b"\x00\xff\xfe\x80garbage")]),
    (0, [("truncate", 0.63, 1)]),
    (1, [("weird", 0.3, "9" * 5000)]),
    (-1, [("weird", 0.3, "--3"), ("deep", 0.5, 1)]),
])
def test_real_subprocess_runs(workdir: Path, seed: int, edits) -> None:
    for name, content, model in [SEEDS[seed]]:
        path = workdir / name
        path.write_bytes(mutate(content, edits))
        p = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "check", str(path), "--model", model,
                            "--workers", "1"], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert_one_line(p.returncode, p.stderr, [str(path)])


SHELL_CHARS = ";|&$`()<>*?![]{}'\"\\\n\t"
NUMERIC_FLAGS = ["--time-limit", "--nemesis-interval", "--op-timeout", "--test-count", "--node-count",
                 "--ssh-port"]
BAD_NUMBERS = ["0", "-1", "-0.5", "nan", "inf", "-inf", "1e999", "", "abc", "9" * 5000, "0x10"]


# Single-valued flags with a value each takes: given twice, `=--` or empty, each is refused.
SINGLE_FLAGS = {"--backend": "none", "--seed": "3", "--workload": "register", "--time-limit": "0.2",
                "--rate": "10", "--name": "x", "--db": FAKE_DB, "--concurrency": "2", "--read-mode": "lease",
                "--junit-xml": "j.xml", "--fault-targets": "one", "--db-version": "1"}
BAD_COUNTS = ["0", "-1", "2.5", "NaN", "nan", "Infinity", "inf", "1e999", "", "abc", "9" * 5000, "true",
              "100000000000", "[1]"]


@st.composite
def bad_run_flags(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(["unknown", "number", "node", "results-file", "twice", "dash", "empty",
                                 "knob", "db", "long-path", "seed"]))
    if kind in ("twice", "dash", "empty"):
        flag = draw(st.sampled_from(sorted(SINGLE_FLAGS)))
        return {"twice": [flag, SINGLE_FLAGS[flag], f"{flag}={SINGLE_FLAGS[flag]}"], "dash": [f"{flag}=--"],
                "empty": [flag, draw(st.sampled_from(["", " ", "\t"]))]}[kind]
    if kind == "knob":
        key = draw(st.sampled_from(["active_keys", "ops_per_key", "active_names", "describe_topics"]))
        return ["--workload-option", f"{key}={draw(st.sampled_from(BAD_COUNTS))}"]
    if kind == "db":
        module = draw(st.text(alphabet="./-~ab", min_size=1, max_size=12).filter(
            lambda m: not all(p.isidentifier() for p in m.split("."))))
        return ["--db", f"{module}:X"]
    if kind == "long-path":
        return [draw(st.sampled_from(["--junit-xml", "--nodes-file", "--schedule", "--ssh-key"])),
                "/tmp/" + "a" * draw(st.integers(256, 6000))]
    if kind == "seed":
        return ["--seed", str(draw(st.integers(2**63, 2**80)))]
    if kind == "unknown":
        return [f"--zz{draw(st.from_regex(r'[a-z][a-z-]{0,12}', fullmatch=True))}"]
    if kind == "number":
        flag = draw(st.sampled_from(NUMERIC_FLAGS))
        return [f"{flag}={draw(st.sampled_from(BAD_NUMBERS))}"]
    if kind == "node":
        bad = draw(st.text(alphabet=SHELL_CHARS, min_size=1, max_size=6))
        name = draw(st.text(alphabet="abc", max_size=3)) + bad + draw(st.text(alphabet="xyz", max_size=3))
        return ["--nodes", f"n1,{name}"]
    return ["RESULTS-IS-A-FILE"]


@settings(FUZZ, max_examples=25)
@given(bad=bad_run_flags())
def test_bad_run_flags_are_refused_before_provisioning(workdir: Path, capsys, monkeypatch, bad) -> None:
    use_fakes(monkeypatch)
    results = workdir / "results"
    if bad == ["RESULTS-IS-A-FILE"]:
        results = workdir / "a-file"
        results.write_text("x")
        bad = []
    base = {"--workload": "register", "--db": FAKE_DB, "--backend": "none", "--time-limit": "0.2"}
    given = {b.split("=", 1)[0] for b in bad}  # a flag under test replaces the default one here
    argv = ["run", *[t for f, v in base.items() if f not in given for t in (f, v)], "--no-progress",
            "--results-dir", str(results), *bad]
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as e:  # the parser's refusal
        code = e.code
    err = capsys.readouterr().err
    assert code == 254, (bad, err)
    assert "Traceback" not in err
    assert not (results.is_dir() and any(results.iterdir())), "provisioned before refusing"


# Damage to one field of one line, in every format: never a pass of an invalid history, never 255,
# and either refused (254) or (when the damage changes nothing a checker reads) the same verdict.
# And rewrites that keep a history's meaning (reformatting, field order, CRLF, shifted times,
# renumbered processes, another format) never change a verdict.

MODEL_FLAGS = {"cas-register": ["--failed-cas", "mismatch", "--nil-read", "empty"],
               "register": ["--nil-read", "empty"], "kv": []}
SUFFIX = {hf.JSONL: ".jsonl", hf.EDN: ".edn", hf.EDN_LINES: ".txt", hf.LOG: ".log"}


@dataclass(frozen=True)
class Seed:
    """A history of known verdict and the formats it can be written in (first: its own)."""

    name: str
    ops: tuple[Op, ...]
    model: str
    formats: tuple[str, ...]
    valid: bool


def _stale(ops: list[dict[str, object]]) -> list[dict[str, object]]:
    """The register history with its last ok read returning a value never written: invalid."""
    out = [dict(o) for o in ops]
    i = max(i for i, o in enumerate(out) if o["f"] == "read" and o["type"] == "ok")
    out[i]["value"] = 99
    return out


def _property_seeds() -> list[Seed]:
    register = [Op.from_dict(o) for o in _register_ops()]
    seeds = [Seed("register-ok", tuple(register), "register", (hf.JSONL, hf.EDN, hf.EDN_LINES), True),
             Seed("register-stale", tuple(Op.from_dict(o) for o in _stale(_register_ops())), "register",
                  (hf.JSONL, hf.EDN, hf.EDN_LINES), False)]
    for rel, model, valid, formats in (
            ("jepsen/etcd_000.log", "cas-register", False, (hf.LOG, hf.JSONL, hf.EDN)),
            ("jepsen/etcd_005.log", "cas-register", True, (hf.LOG, hf.JSONL, hf.EDN)),
            ("kv/c01-bad.txt", "kv", False, (hf.EDN_LINES, hf.JSONL, hf.EDN)),
            ("kv/c01-ok.txt", "kv", True, (hf.EDN_LINES, hf.JSONL, hf.EDN))):
        if (ANCHORS / rel).exists():
            ops, _, _ = load_history(ANCHORS / rel)
            seeds.append(Seed(rel, tuple(ops), model, formats, valid))
    return seeds


PROPERTY_SEEDS = _property_seeds()


def _check(path: Path, seed: Seed, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["check", str(path), "--model", seed.model, "--workers", "1", "--time-limit", "20",
                     *MODEL_FLAGS[seed.model], *extra])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def seed_codes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], int]:
    """Each seed's verdict in each of its formats, checked once: the known verdict, or the test
    has nothing to compare with."""
    d = tmp_path_factory.mktemp("seeds")
    codes: dict[tuple[str, str], int] = {}
    for seed in PROPERTY_SEEDS:
        for fmt in seed.formats:
            p = d / f"seed{SUFFIX[fmt]}"
            p.write_text(hf.render(seed.ops, fmt))
            code = cli.main(["check", str(p), "--model", seed.model, "--workers", "1",
                             *MODEL_FLAGS[seed.model]])
            assert code == (0 if seed.valid else 1), (seed.name, fmt, code)
            codes[seed.name, fmt] = code
    return codes


def _paired(ops: Sequence[Op]) -> set[int]:
    """Positions of client ops whose invocation has a completion (and those completions)."""
    open_: dict[object, int] = {}
    out: set[int] = set()
    for i, o in enumerate(ops):
        if not isinstance(o.process, int):
            continue
        if o.type == "invoke":
            open_[o.process] = i
        elif o.process in open_:
            out.update((open_.pop(o.process), i))
    return out


# Tokens that no reader may take for a field, per format. "~" stands for the field's own value
# spelled as a different name (f "read" -> "readx"): a completion that no longer matches.
BAD_TOKENS: dict[str, dict[str, list[str]]] = {
    hf.JSONL: {"type": ['"invok"', '""', "7", "null", '["ok"]'], "f": ["~", "7", "null", '""'],
               "process": ["12345", "1.5", "null", "[1]"], "value": ["1e999", "NaN", "-Infinity", "[1, 2"],
               "time": ["-1", "100000000000001", "1.5", '"x"', "null", "<"],
               "index": ["-1", '"x"', "1.5", "="], "key": ["~", "1e999"], "node": ["7", "[1]"],
               "meta": ["[1]", "7"], "error": ["1e999", "NaN"]},
    hf.EDN: {"type": [":invok", ":okay", "7", "nil", "[:ok]"], "f": ["~", "7", "nil"],
             "process": ["12345", "1.5", '"p"'], "value": ["##NaN", "##Inf", "1e999", "[1 2"],
             "time": ["-1", "100000000000001", "1.5", '"x"', "nil", "##NaN", "<"],
             "index": ["-1", ":foo", "1.5", "="], "key": ["~", "##NaN"], "error": ["##-Inf"]},
    hf.LOG: {"type": [":invok", ":okay", "7"], "f": ["~", "7"], "process": ["12345", "1.5", "-"],
             "value": ["##NaN", "1e999", "[1 2", "{:a"]},
}
BAD_TOKENS[hf.EDN_LINES] = BAD_TOKENS[hf.EDN]
FIELDS_OF_PAIRED_OPS = {"f", "key"}  # renaming these on an op that never completed is no damage


@st.composite
def damages(draw: st.DrawFn) -> tuple[Seed, str, int, str, str]:
    """(seed, format, line, field, token), or field "torn": the file cut inside that line."""
    seed = draw(st.sampled_from(PROPERTY_SEEDS))
    fmt = draw(st.sampled_from(seed.formats))
    i = draw(st.integers(0, len(seed.ops) - 1))
    field_names = [*sorted(BAD_TOKENS[fmt]), "torn"]
    fld = draw(st.sampled_from(field_names))
    if fld in FIELDS_OF_PAIRED_OPS and i not in _paired(seed.ops):
        i = min(_paired(seed.ops))
    token = "" if fld == "torn" else draw(st.sampled_from(BAD_TOKENS[fmt][fld]))
    return seed, fmt, i, fld, token


def _damaged(seed: Seed, fmt: str, i: int, fld: str, token: str, cut: float) -> str:
    ops = seed.ops
    if fld == "torn":
        whole = hf.render(ops, fmt)
        start = len(hf.render(ops[:i], fmt)) if fmt != hf.EDN else (
            len(hf.render(ops[:i], fmt)) - 2 if i else 0)  # the vector's "]\n" ends the prefix
        # The line's last character: its closing brace (before the vector's "]\n" in EDN), or
        # the last character before its newline. The cut always leaves it off: a line kept whole
        # is a shorter history, not a torn one.
        last = len(hf.render(ops[:i + 1], fmt)) - (3 if fmt == hf.EDN else 2)
        return whole[:start + 1 + int(cut * max(0, last - start - 1))]
    o = ops[i]
    if token == "~" and fld == "key" and o.key is None:
        # A key added to an op that had none: its completion may omit the key, so that is another
        # history (an op on another key), not damage. A number no reader takes is.
        token = "1e999"
    elif token == "~":
        token = hf.fields(o, fmt)[fld] + "x" if fld == "f" else hf.fields(o, fmt)[fld][:-1] + 'zz"'
    elif token == "=":  # the previous op's index, or one that is not a number at all
        token = str(ops[i - 1].index) if i else "-1"
    elif token == "<":  # a completion timed before its invocation (or before the test began)
        inv = next((ops[j] for j in range(i - 1, -1, -1) if ops[j].process == o.process), None)
        token = str(inv.time - 1) if o.type != "invoke" and inv is not None and inv.time > 0 else "-1"
    return hf.render(ops, fmt, damage={i: {fld: token}})


def test_a_torn_line_is_cut_inside_the_line() -> None:
    """Even at the ends of its range the cut leaves the line incomplete (a line kept whole would
    be a prefix of the history, which may rightly pass)."""
    for seed in PROPERTY_SEEDS:
        for fmt in seed.formats:
            for i in range(len(seed.ops)):
                full = hf.render(seed.ops[:i + 1], fmt)
                upto = full.removesuffix("]\n" if fmt == hf.EDN else "\n")
                assert len(upto) < len(full)
                for cut in (0.0, 0.5, 1.0):
                    torn = _damaged(seed, fmt, i, "torn", "", cut)
                    assert upto.startswith(torn) and len(torn) < len(upto), (seed.name, fmt, i, cut)


@settings(FUZZ, max_examples=80)
@given(d=damages(), cut=st.floats(0, 1, allow_nan=False))
def test_one_damaged_field_is_refused_or_changes_nothing(workdir: Path, capsys, seed_codes, d, cut) -> None:
    seed, fmt, i, fld, token = d
    path = workdir / f"damaged{SUFFIX[fmt]}"
    path.write_text(_damaged(seed, fmt, i, fld, token, cut))
    code, err = _check(path, seed, capsys)
    assert_one_line(code, err, [str(path)])
    assert code != 255
    if not seed.valid:
        assert code != 0, (seed.name, fmt, i, fld, token, path.read_text()[:3000])
    assert code in (254, seed_codes[seed.name, fmt]), (seed.name, fmt, i, fld, token, err)


@st.composite
def rewrites(draw: st.DrawFn) -> tuple[Seed, str, str, dict[str, Any]]:
    """(seed, format, file text, what was done): the seed rewritten without changing its meaning."""
    seed = draw(st.sampled_from(PROPERTY_SEEDS))
    fmt = draw(st.sampled_from(seed.formats))  # another format than the seed's own is a conversion
    ops = list(seed.ops)
    done: dict[str, Any] = {"format": fmt}
    if fmt != hf.LOG and draw(st.booleans()):  # every time shifted: only their order is read
        shift = draw(st.integers(0, 10**12))
        ops = [dataclasses.replace(o, time=o.time + shift) for o in ops]
        done["shift"] = shift
    if draw(st.booleans()):  # client processes renumbered one to one
        procs = sorted({o.process for o in ops if isinstance(o.process, int)})
        new = draw(st.permutations(range(len(procs))))
        offset = draw(st.integers(0, 10**6))
        to = {p: new[k] * 3 + offset for k, p in enumerate(procs)}
        ops = [dataclasses.replace(o, process=to[o.process]) if isinstance(o.process, int) else o
               for o in ops]
        done["processes"] = to
    style: dict[str, Any] = {"newline": draw(st.sampled_from(["\n", "\r\n"]))}
    if fmt == hf.LOG:
        style["sep"] = draw(st.sampled_from(["\t", " ", "  \t "]))
    else:
        style["spaced"] = draw(st.booleans())
        style["order"] = draw(st.permutations(list(Op.__dataclass_fields__)))
    done.update(style)
    return seed, fmt, hf.render(ops, fmt, **style), done


@settings(FUZZ, max_examples=30)
@given(r=rewrites())
def test_a_meaning_preserving_rewrite_keeps_the_verdict(workdir: Path, capsys, seed_codes, r) -> None:
    seed, fmt, text, done = r
    path = workdir / f"rewritten{SUFFIX[fmt]}"
    path.write_bytes(text.encode())
    code, err = _check(path, seed, capsys)
    assert code == (0 if seed.valid else 1), (seed.name, done, err)
