"""Every command the README shows is run here as it is written, so the guide cannot drift from the
code: the commands are read from README.md itself, in order, in one scratch directory (a later
command reads the results an earlier one wrote), each expected to exit as its `# exit N` comment
says (0 when it says nothing)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: commands CI itself runs before this suite, and the suite itself: running them again here would
#: install twice or recurse
RUN_BY_CI = {
    "bash scripts/setup.sh": "CI's first step (.ci/run)",
    "bash scripts/test.sh": "the command that runs this very test",
    "pip install -e .": "what scripts/setup.sh does",
}


@dataclass(frozen=True)
class Command:
    line: int
    argv: tuple[str, ...]
    exit_code: int

    @property
    def needs_docker(self) -> bool:
        """A run on the default backend provisions containers; the simulator and the checkers don't."""
        sub = self.argv[1] if len(self.argv) > 1 else ""
        backend = self.argv[self.argv.index("--backend") + 1] if "--backend" in self.argv else "docker"
        return self.argv[0] == "jepsen-py" and sub in {"run", "test-all", "db-check"} and backend == "docker"


def readme_commands(text: str) -> list[Command]:
    """The commands in the README's indented code blocks (four spaces), split at `&&`, with
    backslash continuations joined."""
    out: list[Command] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        raw = lines[i]
        start = i + 1
        if not raw.startswith("    ") or raw.startswith("     "):
            i += 1
            continue
        joined = raw.strip()
        while joined.endswith("\\") and i + 1 < len(lines):
            i += 1
            joined = joined[:-1] + " " + lines[i].strip()
        i += 1
        code, _, comment = joined.partition("#")
        m = re.search(r"exit (\d+)", comment)
        expected = int(m.group(1)) if m else 0
        for part in code.split("&&"):
            argv = tuple(shlex.split(part))
            if argv:
                out.append(Command(start, argv, expected))
    return out


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))


def _runnable(cmd: Command) -> bool:
    return " ".join(cmd.argv) not in RUN_BY_CI


def _run(cmd: Command, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = list(cmd.argv)
    if argv[0] == "jepsen-py":
        quiet = ["--no-progress"] if _has_progress(argv) else []
        argv = [sys.executable, "-m", "jepsen_py", *argv[1:], *quiet]
    elif argv[:2] == ["python3", "-m"]:
        argv = [sys.executable, *argv[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # pytest's own commands run from the checkout, where their paths are
    where = ROOT if "pytest" in argv else cwd
    return subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, timeout=900)


def _has_progress(argv: list[str]) -> bool:
    return len(argv) > 1 and argv[1] in {"run", "explore", "test-all"}


def test_the_readme_shows_commands_and_every_one_is_accounted_for():
    """What the extraction found is what the README holds: the two set-up commands first, and
    nothing but jepsen-py, the set-up scripts and pytest."""
    assert COMMANDS, "no command found in README.md"
    firsts = [" ".join(c.argv) for c in COMMANDS[:4]]
    assert firsts[0] == "bash scripts/setup.sh" and firsts[1].startswith("jepsen-py run --workload offsets")
    assert firsts[2:4] == ["bash scripts/setup.sh", "bash scripts/test.sh"]
    for c in COMMANDS:
        assert c.argv[0] in {"jepsen-py", "bash", "python3", "pip"}, (c.line, c.argv)


def _no_docker_commands() -> list[Command]:
    return [c for c in COMMANDS if _runnable(c) and not c.needs_docker]


def test_the_readme_commands_that_need_no_docker_run_as_written(tmp_path):
    """In order, in one directory: the simulated runs, then the checks of what they wrote, then
    explore. Each exits as the README says."""
    cmds = _no_docker_commands()
    assert any("--backend" in c.argv for c in cmds), "the README must show a first run without Docker"
    for c in cmds:
        proc = _run(c, tmp_path)
        assert proc.returncode == c.exit_code, (
            f"README.md:{c.line}: {' '.join(c.argv)} exited {proc.returncode}, the README says "
            f"{c.exit_code}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


@pytest.mark.docker
@pytest.mark.slow
def test_the_readme_commands_on_docker_run_as_written(tmp_path, node_image):
    cmds = [c for c in COMMANDS if _runnable(c) and c.needs_docker]
    assert cmds, "the README's main job runs on Docker"
    for c in cmds:
        proc = _run(c, tmp_path)
        assert proc.returncode == c.exit_code, (
            f"README.md:{c.line}: {' '.join(c.argv)} exited {proc.returncode}\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    reports = list(tmp_path.glob("*.xml"))
    assert reports and "verdict" in reports[0].read_text(encoding="utf-8")
