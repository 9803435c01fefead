"""What any flag of any command may be given: the rules every subcommand's parser shares.

argparse alone lets through what no flag can mean: `--backend ""` (an empty value read as "the
default", so a simulated run provisioned real containers), `--seed=--` (argparse drops the `--` and
stores `[]`), and a single-valued flag given twice (`--backend sim --backend docker`: the last one
silently wins). `Parser` refuses all three, one line naming the flag, exit 254, before any command
runs; flags that collect values (`--bug`, `-n/--node`, `--workload-option`) stay repeatable.
A flag whose own check says more about an empty value (`--nodes ""`) opts out with `allow_empty`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from jepsen_py.errors import EXIT_BAD_INPUT, BadInput

_EMPTY_OK = "_jepsen_py_empty_ok"

# Longest file name and path the kernel takes (Linux NAME_MAX and PATH_MAX - 1); past them every
# open fails with ENAMETOOLONG, so a flag naming such a path is refused when parsed.
NAME_MAX = 255
PATH_MAX = 4095
# What a run makes under --results-dir: <test name>/<timestamp>/nodes/<node>/ and the files there.
RUN_DIR_ROOM = 512


def allow_empty(action: argparse.Action) -> argparse.Action:
    """Marks `action` as taking an empty value (its own check then refuses it, saying more)."""
    setattr(action, _EMPTY_OK, True)
    return action


def _single_valued(action: argparse.Action) -> bool:
    """A flag whose second occurrence would silently replace the first (not one that collects)."""
    return bool(action.option_strings) and isinstance(
        action, argparse._StoreAction | argparse.BooleanOptionalAction)


class Parser(argparse.ArgumentParser):
    """argparse, but bad flags exit 254 (bad arguments) instead of argparse's 2 (our 'unknown'), a
    flag is taken only by its full name (a prefix of a longer flag is an unknown flag), and the
    values no flag can mean are refused (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self._given: list[argparse.Action] | None = None

    def error(self, message: str) -> NoReturn:
        # one line, not argparse's usage block above it: a gate's log shows what was wrong
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_BAD_INPUT)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        outer, self._given = self._given, []
        try:
            parsed = super().parse_known_args(args, namespace)
            seen: set[int] = set()
            for action in self._given:
                if not _single_valued(action):
                    continue
                if id(action) in seen:
                    self.error(f"argument {argparse._get_action_name(action)}: given more than once "
                               "(it takes one value)")
                seen.add(id(action))
            return parsed
        finally:
            self._given = outer

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        if self._given is not None:
            self._given.append(action)
        if action.nargs in (argparse.PARSER, argparse.REMAINDER):  # a subcommand's own arguments
            return super()._get_values(action, arg_strings)
        name = argparse._get_action_name(action)
        if action.option_strings and action.nargs in (None, argparse.OPTIONAL) and "--" in arg_strings:
            self.error(f"argument {name}: expected a value, got '--'")
        if not getattr(action, _EMPTY_OK, False) and any(
                isinstance(s, str) and not s.strip() for s in arg_strings):
            optional = action.option_strings and not action.required
            hint = "; leave the flag out for its default" if optional else ""
            self.error(f"argument {name}: empty value{hint}")
        return super()._get_values(action, arg_strings)


def path_text(text: str) -> str:
    """An argparse `type=` for a path a user names: refused when no file could ever have that name
    (longer than the kernel takes), so nothing fails later with ENAMETOOLONG mid-run."""
    raw = os.fsencode(text)
    longest = max((len(p) for p in raw.split(b"/")), default=0)
    if longest > NAME_MAX or len(raw) > PATH_MAX:
        raise argparse.ArgumentTypeError(
            f"path too long ({len(raw)} bytes, a name of {longest}; at most {NAME_MAX} per name and "
            f"{PATH_MAX} in all): {text[:40]!r}...")
    return text


def check_room(flag: str, directory: str | Path, room: int = RUN_DIR_ROOM) -> None:
    """`directory` leaves `room` bytes of PATH_MAX for what a command makes under it (a run's
    directory, its nodes' logs and data), so a run does not fail with ENAMETOOLONG halfway."""
    length = len(os.fsencode(os.path.abspath(directory)))
    if length + room > PATH_MAX:
        raise BadInput(f"{flag}: {str(directory)[:40]}... is {length} bytes long, which leaves too little of "
                       f"the {PATH_MAX} a path may have for the runs under it (at most {PATH_MAX - room})")


def check_output_file(flag: str, file: str | Path) -> Path:
    """A file the command will write, checked before it does anything: not a directory, in a
    directory that exists and is writable. Only the file is made: a mistyped directory is refused,
    not created."""
    p = Path(file)
    if p.is_dir():
        raise BadInput(f"{flag}: {p} is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"{flag}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise BadInput(f"{flag}: directory {parent} is not writable")
    return p


def path(text: str) -> Path:
    """`path_text` as a Path."""
    return Path(path_text(text))


path_text.__name__ = path.__name__ = "path"  # argparse names the type in its messages


_PAIR_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


def parse_pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    """`FLAG KEY=VALUE`, repeated -> {KEY: VALUE} (--db-option, --backend-option); a key given twice
    is a mistake, not an override."""
    out: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise BadInput(f"{flag}: expected KEY=VALUE, got {item!r}")
        if not _PAIR_KEY.match(key):
            raise BadInput(f"{flag}: {key!r} is not a usable key (a letter, then letters, digits, _ . -)")
        if key in out:
            raise BadInput(f"{flag}: {key} given twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out
