"""Errors and exit codes. A CI gate reads the exit code, so each has one meaning."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_FRAMEWORK = 255


class JepsenError(Exception):
    """An error the CLI reports as one line and an exit code, never a traceback."""

    exit_code = EXIT_FRAMEWORK


class BadInput(JepsenError):
    """Something the user gave us is wrong: a flag, a file, a history line. Exit 254."""

    exit_code = EXIT_BAD_INPUT


class EnvironmentProblem(JepsenError):
    """The world the test needs is not there (Docker not reachable, results dir not writable).

    Counted as bad input (254): the user can fix it; the framework did nothing wrong.
    """

    exit_code = EXIT_BAD_INPUT


class FrameworkFailure(JepsenError):
    """The framework itself failed while running a test. Exit 255."""

    exit_code = EXIT_FRAMEWORK


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM ended a run after its results.json was written (verdict unknown).

    Still a KeyboardInterrupt, so everything that stops on one stops; it carries the stored run so
    the CLI can write the run's JUnit report: a gate reading only the report must see "unknown"."""

    def __init__(self, run_dir: Path, results: dict[str, Any]) -> None:
        super().__init__(f"interrupted; run stored in {run_dir}")
        self.run_dir = run_dir
        self.results = results


def quote(value: object, limit: int = 40) -> str:
    """`value` as a one-line message quotes what a user gave: its repr, cut short (with its length)
    when long, so a 300-character name or a 4,000-digit number leaves the line readable."""
    if isinstance(value, int) and not isinstance(value, bool):
        digits = str(value)
        return digits if len(digits) <= limit else f"{digits[:limit]}... ({len(digits)} digits)"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit + 2 else f"{text[:limit]}..."


def describe(e: BaseException) -> str:
    """What a plugin's exception says, on one line: its type and message (a syntax error with its
    file and line), whitespace folded and cut short, for a refusal that names the plugin."""
    if isinstance(e, SyntaxError):
        where = f" ({os.path.basename(e.filename or '?')}, line {e.lineno})" if e.filename else ""
        text = f"{type(e).__name__}: {e.msg}{where}"
    else:
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:300] + "..."
