"""Maelstrom's own demo nodes, found where CI lays the shared anchors, and a check that every test
leaves no node process and no router thread behind."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import require


def _demo_dir() -> Path:
    given = os.environ.get("JEPSEN_PY_MAELSTROM_ANCHORS")
    if given:
        return Path(given) / "demo"
    beside = Path(__file__).resolve().parents[4] / "shared" / "anchors" / "maelstrom"
    return (beside if beside.is_dir() else Path("/work/shared/anchors/maelstrom")) / "demo"


DEMO = _demo_dir()
INTERPRETERS = {"python": "python3", "js": "node", "ruby": "ruby"}


def demo_argv(lang: str, script: str) -> list[str]:
    """argv running Maelstrom's demo `script` unchanged, from where it lies; skipped (failed in CI)
    when the demo or its interpreter is missing."""
    path = DEMO / lang / script
    require(f"Maelstrom's demo {path}", path.is_file())
    interpreter = shutil.which(INTERPRETERS[lang])
    require(f"{INTERPRETERS[lang]} (scripts/setup.sh installs it)", interpreter is not None)
    dont_write = ["-B"] if lang == "python" else []  # no __pycache__ beside the shared demo
    return [str(interpreter), *dont_write, str(path)]


def _children() -> list[int]:
    """Processes whose parent is this one (zombies included: a child not reaped is a leak too)."""
    me = str(os.getpid())
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me:
            out.append(int(entry))
    return out


def _ours() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("maelstrom-")]


@pytest.fixture(autouse=True)
def no_leaks() -> object:
    before = set(_children())
    yield
    deadline = time.monotonic() + 2
    while (set(_children()) - before or _ours()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(_children()) - before == set(), "a node process outlived its test"
    assert _ours() == [], "a router or node thread outlived its test"


def write_node(directory: Path, name: str, source: str) -> list[str]:
    """argv running a tiny Python node written for a test (standard library only)."""
    path = directory / f"{name}.py"
    path.write_text(source)
    return [sys.executable, str(path)]
