"""Every `jepsen-py ...` command in docs/*.md is read from the page and accounted for, so the
reference cannot drift from the code: the ones that need no Docker (the simulator, a check of a
stored run, --help, --version) are run as written, in one scratch directory (runs first, so the
analyze and timeline commands find results/latest); every other one is listed below as skipped by
design, with its reason. Every command without placeholders is also parsed by the real command
line, so a doc naming a flag that does not exist fails here even when it needs Docker to run.

A command is a code line (indented, or in a fenced block) or an inline code span that starts with
`jepsen-py`, cut at a shell operator (`&&`, `||`, `|`). It is expected to exit as its trailing
comment says (`# exit N`, `# invalid...` for 1, `# valid` for 0), else 0.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from jepsen_py.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))


@dataclass(frozen=True)
class DocCommand:
    file: str
    line: int
    argv: tuple[str, ...]
    exit_code: int

    @property
    def text(self) -> str:
        return " ".join(self.argv)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _expected_exit(comment: str) -> int:
    m = re.search(r"exit (\d+)", comment)
    if m:
        return int(m.group(1))
    return 1 if re.match(r"\s*invalid", comment) else 0


def _command(file: str, line: int, text: str) -> DocCommand | None:
    code, _, comment = text.partition(" #")
    code = re.split(r"\s(?:&&|\|\||\|)\s", code)[0]
    try:
        argv = tuple(shlex.split(code))
    except ValueError:  # an unbalanced quote: prose, not a command
        return None
    if not argv or argv[0] != "jepsen-py":
        return None
    return DocCommand(file, line, argv, _expected_exit(comment))


def doc_commands(name: str, text: str) -> list[DocCommand]:
    """The commands of one page, in order (see the module docstring for what counts)."""
    out: list[DocCommand] = []
    lines = text.split("\n")
    fenced = False
    i = 0
    while i < len(lines):
        raw, start = lines[i], i + 1
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            i += 1
            continue
        code_line = fenced or raw.startswith("    ")
        stripped = raw.strip()
        if code_line and stripped.startswith("jepsen-py "):
            while stripped.endswith("\\") and i + 1 < len(lines):
                i += 1
                stripped = stripped[:-1] + " " + lines[i].strip()
            cmd = _command(name, start, stripped)
            if cmd is not None:
                out.append(cmd)
        i += 1
    # inline spans, which may run over a line break, outside fenced blocks and indented code
    prose = []
    fenced = False
    for raw in lines:
        if raw.lstrip().startswith("```"):
            fenced = not fenced
        prose.append("" if fenced or raw.startswith("    ") else raw)
    joined = "\n".join(prose)
    for m in re.finditer(r"`(jepsen-py[^`]*)`", joined):
        cmd = _command(name, joined.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split()))
        if cmd is not None:
            out.append(cmd)
    return sorted(out, key=lambda c: c.line)


COMMANDS = [c for path in DOCS for c in doc_commands(f"docs/{path.name}", path.read_text(encoding="utf-8"))]

PLACEHOLDER = re.compile(r"\[|\||\.\.\.|\$|\b[A-Z][A-Z_]*\b")

#: docker-less commands not run because of what they are (keyed by the command as written)
LONG = {
    "jepsen-py test-all --backend sim": "the whole matrix and the correct build's sweep in the "
    "simulator, 500+ runs: hours (tests/jepsen_py/sim/test_matrix.py runs small matrices)",
    "jepsen-py test-all --backend sim --bugs correct --correct-runs 500 --time-limit 6 "
    "--sweep-nemesis-interval 1.5 --parallel 3": "a measurement: 500 simulated runs, half an hour",
    "jepsen-py explore --bug recovery-duplicates": "a measurement with random seeds: a finding (exit 1) "
    "or none (exit 0) within the 60 s budget, then minutes of shrinking; tests/explore/ pins seeds",
    "jepsen-py explore --keep-going --budget 1800 --seed 77": "a measurement: the correct build "
    "searched for 30 minutes in the simulator (tests/jepsen_py/explore/ searches it briefly)",
}


#: options named in a sentence without their value (keyed by the span as written)
OPTION_NAMED = {"jepsen-py run --schedule"}


def _backend(argv: tuple[str, ...]) -> str:
    """The backend a command runs on: its --backend, else its subcommand's default (explore searches
    in the simulator; run, test-all and db-check provision Docker)."""
    if "--backend" in argv[:-1]:
        return argv[argv.index("--backend") + 1]
    return "sim" if argv[1] == "explore" else "docker"


def needs_nodes(c: DocCommand) -> str | None:
    """Why the command needs Docker, hosts or root, or would touch what other runs made; None if
    it needs none of them."""
    if len(c.argv) < 2 or "--help" in c.argv:
        return None
    sub = c.argv[1]
    if sub == "cleanup":
        return "removes every jepsen-py container, network and rule on the host, other runs' too"
    if sub == "image":
        return "builds the Docker node image"
    if sub in {"run", "test-all", "db-check", "explore"}:
        backend = _backend(c.argv)
        if backend == "docker":
            return "needs Docker (--backend docker; run's default)"
        if backend == "ssh":
            return "needs SSH hosts"
        if backend == "local":
            return "needs root with network namespaces and iptables"
    return None


def not_run(c: DocCommand) -> str | None:
    """Why a docker-less command is not run as written; None if it is run."""
    if len(c.argv) == 1:
        return "names the program in prose"
    if PLACEHOLDER.search(" ".join(c.argv[1:])):
        return "a synopsis: placeholders to fill in"
    if c.argv[1] == "serve":
        return "a server that runs until stopped"
    if names_only(c):
        return "names the subcommand in prose"
    return LONG.get(c.text)


def names_only(c: DocCommand) -> bool:
    """A command named in a sentence, not run: the subcommand alone, or an option whose value the
    sentence goes on to give."""
    return (len(c.argv) == 2 and not c.argv[1].startswith("-")) or c.text in OPTION_NAMED


NEED_NODES = [(c, r) for c in COMMANDS if (r := needs_nodes(c)) is not None]
DOCKERLESS = [c for c in COMMANDS if needs_nodes(c) is None]
SKIPPED = [(c, r) for c in DOCKERLESS if (r := not_run(c)) is not None]
RUN = [c for c in DOCKERLESS if not_run(c) is None]

#: how many docker-less commands are skipped by design: a new one makes this test fail until it is
#: run (or its reason is added above and counted here)
DOCKERLESS_SKIPPED = 52

#: a piece of the output where the doc shows or names it, keyed by the command as written
OUTPUT = {
    "jepsen-py --version": re.compile(r"^jepsen-py \d"),  # ci.md: names the installed jepsen-py
    "jepsen-py run --help": re.compile(r"--time-limit"),  # cli.md: lists every option
}


def _listing(pairs: list[tuple[DocCommand, str]]) -> str:
    return "\n".join(f"  {c.where}: {c.text} -- {r}" for c, r in pairs)


def test_the_docs_commands_are_found_and_each_is_run_or_skipped_by_design() -> None:
    assert len(COMMANDS) > 40 and RUN and NEED_NODES
    assert len(SKIPPED) == DOCKERLESS_SKIPPED, (
        f"{len(SKIPPED)} docker-less doc commands are not run, {DOCKERLESS_SKIPPED} expected; run the "
        f"new one or say why it cannot be:\n{_listing(SKIPPED)}")
    assert all(text in {c.text for c in COMMANDS} for text in LONG), "a LONG entry no doc shows any more"
    print(f"run: {len(RUN)}\n" + "\n".join(f"  {c.where}: {c.text}" for c in RUN))
    print(f"skipped by design, needing Docker, hosts or root: {len(NEED_NODES)}\n{_listing(NEED_NODES)}")
    print(f"skipped by design, docker-less: {len(SKIPPED)}\n{_listing(SKIPPED)}")


def test_the_extraction_reads_code_lines_fences_and_spans_over_a_line_break() -> None:
    page = "\n".join([
        "Run `jepsen-py run --backend sim --workload",
        "offsets` or:",
        "",
        "    jepsen-py check h.jsonl --model cas-register   # exit 1",
        "    jepsen-py run --db x:Y \\",
        "        --time-limit 5 && echo done",
        "```yaml",
        "  - run: |",
        "      jepsen-py run --workload metadata || exit $?",
        "```",
        "`jepsen-py: valid=true` is output, not a command; so is `python3 -m pytest`.",
    ])
    got = [(c.line, c.text, c.exit_code) for c in doc_commands("p.md", page)]
    assert got == [(1, "jepsen-py run --backend sim --workload offsets", 0),
                   (4, "jepsen-py check h.jsonl --model cas-register", 1),
                   (5, "jepsen-py run --db x:Y --time-limit 5", 0),
                   (9, "jepsen-py run --workload metadata", 0)]


def test_every_doc_command_without_placeholders_parses() -> None:
    """The flags a page names exist and take the values it gives them, Docker or not."""
    wrong = []
    for c in COMMANDS:
        if len(c.argv) < 2 or PLACEHOLDER.search(" ".join(c.argv[1:])) or names_only(c):
            continue
        if {"--help", "--version"} & set(c.argv):  # these print and exit 0: they are run below
            continue
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(list(c.argv[1:]))
        except SystemExit as e:
            wrong.append(f"{c.where}: {c.text}: exit {e.code}: {err.getvalue().strip()[-300:]}")
    assert wrong == []


def _run(c: DocCommand, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "jepsen_py", *c.argv[1:]]
    if c.argv[1] in {"run", "explore", "test-all"} and "--help" not in c.argv:
        argv.append("--no-progress")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_the_docs_commands_that_need_no_docker_run_as_written(tmp_path: Path) -> None:
    """Runs first (a later analyze or timeline reads results/latest), each distinct command once;
    each exits as its page says, with the output the page shows."""
    order = sorted(RUN, key=lambda c: c.argv[1] != "run")
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # where a checkout's examples are
    done: set[str] = set()
    for c in order:
        if c.text in done:
            continue
        done.add(c.text)
        proc = _run(c, tmp_path)
        assert proc.returncode == c.exit_code, (
            f"{c.where}: {c.text} exited {proc.returncode}, the page says {c.exit_code}\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        if c.text in OUTPUT:
            assert OUTPUT[c.text].search(proc.stdout), f"{c.where}: {c.text}: {proc.stdout[-1000:]}"
        if c.argv[1] == "analyze":  # re-checks the stored run: the verdict the run stored
            stored = json.loads((tmp_path / c.argv[2] / "results.json").read_text())
            assert stored["valid"] is (c.exit_code == 0)
    assert {c.argv[1] for c in RUN} >= {"run", "analyze", "timeline"}
