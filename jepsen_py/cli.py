"""The `jepsen-py` command line. Each subcommand lives in its own module under jepsen_py/commands/.

A subcommand module exposes `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`.
Every error a user can cause ends as one line on stderr and an exit code (errors.py), never a
traceback; anything else is a framework failure (255) with the traceback in the log. Every parser is
jepsen_py.flags.Parser: flags are never abbreviated (`--no-ssh` must not mean `--no-ssh-sudo`), and
empty, `--` and repeated single values are refused. A closed stdout (`| head`) does not turn a verdict
into a failure.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any, TextIO

from jepsen_py.errors import EXIT_BAD_INPUT, EXIT_FRAMEWORK, JepsenError
from jepsen_py.flags import Parser as _Parser

# Subcommand modules in the order --help lists them. An issue that adds a subcommand adds it here.
COMMANDS: tuple[str, ...] = (
    "run", "analyze", "check", "cleanup", "image", "timeline", "serve", "export", "aggregate", "test_all",
    "explore", "db_check", "maelstrom",
)

log = logging.getLogger("jepsen_py")


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"jepsen_py.commands.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jepsen-py",
        description=(
            "Jepsen-style testing of distributed systems: provision a cluster, drive concurrent "
            "clients, inject faults, record every operation and check the history. "
            "Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or input, "
            "255 framework failure."
        ),
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail to stderr")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        mod = _load(name)
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def package_version() -> str:
    """The installed distribution's version; a source tree never installed has none to tell."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jepsen-py")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _ReaderMayLeave:
    """stdout for one command: when its reader goes away (`jepsen-py check F --json | head -c1`), the
    rest of the output is dropped instead of raising BrokenPipeError, so the command still finishes and
    its exit code is still the verdict. Python ignores SIGPIPE, so a closed pipe shows up only here."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self.reader_left = False

    def _left(self) -> None:
        self.reader_left = True
        try:  # later flushes (Python's own, at exit) go nowhere instead of failing again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._inner.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                return self._inner.write(text)
            except BrokenPipeError:
                self._left()
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._inner.flush()
            except BrokenPipeError:
                self._left()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command and returns its exit code; a closed stdout changes nothing about it."""
    real = sys.stdout
    out = _ReaderMayLeave(real)
    sys.stdout = out  # type: ignore[assignment]
    try:
        code = _main(argv)
        out.flush()
        return code
    finally:
        sys.stdout = real


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args._run(args))
    except JepsenError as e:
        print(f"jepsen-py: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("jepsen-py: interrupted", file=sys.stderr)
        return EXIT_FRAMEWORK
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            return _internal_error(e)
        # a name built from the user's (a --name, a path under --results-dir): theirs to shorten
        print(f"jepsen-py: file name too long: {str(e.filename)[:80]}...", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:
        return _internal_error(e)


def _internal_error(e: Exception) -> int:
    """The framework itself failed: say so in one line, keep the detail."""
    log.debug("framework failure", exc_info=e)
    print(f"jepsen-py: internal error: {type(e).__name__}: {e} (run with -v for the traceback)",
          file=sys.stderr)
    return EXIT_FRAMEWORK


if __name__ == "__main__":
    raise SystemExit(main())
