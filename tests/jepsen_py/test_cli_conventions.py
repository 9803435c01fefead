"""What users and CI expect of any command line: no abbreviated flags, `--version`, `python -m`, and a
closed stdout that does not turn a verdict into a framework failure."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from jepsen_py import cli

REPO = Path(__file__).resolve().parents[2]


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out.extend(_parsers(sub))
    return out


def test_no_parser_takes_abbreviated_flags() -> None:
    parsers = _parsers(cli.build_parser())
    assert len(parsers) > len(cli.COMMANDS)
    assert all(p.allow_abbrev is False for p in parsers), [p.prog for p in parsers if p.allow_abbrev]


def test_jepsens_no_ssh_is_refused_before_anything_is_provisioned(tmp_path: Path) -> None:
    results = tmp_path / "results"
    p = subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--no-ssh", "--results-dir", str(results),
                        "--time-limit", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 254, p.stderr
    assert "unrecognized arguments: --no-ssh" in p.stderr
    assert "Traceback" not in p.stderr
    assert not results.exists()


def test_a_prefix_of_a_flag_is_an_unknown_flag(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "jepsen_py", "check", str(tmp_path / "h.jsonl"), "--model",
                        "register", "--time-lim", "5"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 254
    assert "unrecognized arguments: --time-lim" in p.stderr


def test_version_and_python_dash_m() -> None:
    from importlib.metadata import version

    p = subprocess.run([sys.executable, "-m", "jepsen_py", "--version"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert p.returncode == 0
    assert p.stdout.strip() == f"jepsen-py {version('jepsen-py')}"
    h = subprocess.run([sys.executable, "-m", "jepsen_py", "--help"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert h.returncode == 0 and "aggregate" in h.stdout


def _history(path: Path, *, valid: bool) -> Path:
    """A register history: a write of 1 then a read of 1 (valid) or of 2 (never written: invalid)."""
    rows = [
        {"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "write", "value": 1},
        {"index": 1, "time": 1, "type": "ok", "process": 0, "f": "write", "value": 1},
        {"index": 2, "time": 2, "type": "invoke", "process": 1, "f": "read", "value": None},
        {"index": 3, "time": 3, "type": "ok", "process": 1, "f": "read", "value": 1 if valid else 2},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _check_into_closed_pipe(history: Path) -> subprocess.CompletedProcess[str]:
    """`jepsen-py check FILE --json` whose stdout is a pipe nobody reads any more."""
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first byte: every write is EPIPE
    try:
        return subprocess.run([sys.executable, "-m", "jepsen_py", "check", str(history), "--model",
                               "register", "--json"], stdout=w, stderr=subprocess.PIPE, text=True,
                              cwd=REPO, timeout=120)
    finally:
        os.close(w)


def test_a_closed_stdout_keeps_the_verdict_as_exit_code(tmp_path: Path) -> None:
    for valid, code in ((True, 0), (False, 1)):
        p = _check_into_closed_pipe(_history(tmp_path / f"h{code}.jsonl", valid=valid))
        assert p.returncode == code, p.stderr
        assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr
        assert "internal error" not in p.stderr


def test_piped_into_head(tmp_path: Path) -> None:
    """The shell's `jepsen-py check FILE --json | head -c1`: head gets its byte, check its verdict."""
    history = _history(tmp_path / "bad.jsonl", valid=False)
    check = subprocess.Popen([sys.executable, "-m", "jepsen_py", "check", str(history), "--model",
                              "register", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=REPO)
    head = subprocess.run(["head", "-c1"], stdin=check.stdout, capture_output=True, timeout=120)
    assert check.stdout is not None and check.stderr is not None
    check.stdout.close()
    err = check.stderr.read().decode()
    assert check.wait(timeout=120) == 1, err
    assert head.stdout == b"{"
    assert "Traceback" not in err and "internal error" not in err
