"""Numbers a user types: finite, in range, or refused with one line naming the flag.

Python's float() takes "nan" and "inf", and NaN compares false with everything, so a `<= 0` test
lets it through (a time limit of NaN switched the budget off). Every numeric flag of every command
goes through `number` / `integer` here: as an argparse `type=` (the parser then exits 254 naming the
flag) or directly via `check` for values that arrive another way.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jepsen_py.errors import BadInput, quote

# A week: longer than any test or check anyone waits for, short enough that deadlines stay exact.
MAX_SECONDS = 7 * 24 * 3600.0
# The longest main phase `run` takes: a day. Histories are refused past 10^5 s (history.py), which
# also bounds every per-second view of a run (availability buckets, plots).
MAX_RUN_SECONDS = 86_400.0
# Worker processes: far beyond any machine's cores, small enough not to exhaust the process table.
MAX_WORKERS = 1024

# Nodes and clients of one run, even with --ignore-machine-limits: every client is a thread (a task
# in the simulator, where 2,000 clients already take 30 s for one simulated second here) and every
# node a process or a container; past these a run measures only the machine.
MAX_NODES = 1_000
MAX_CLIENTS = 10_000

# Seeds run from 0 to 2^63 - 1: a run's seed is exported to Parquet as int64 (Spark's long), and a
# larger one failed the export at the end of the run. Every seed a user gives, by flag or by file,
# and every seed derived from one (seed + run index), is checked against this.
MAX_SEED = 2**63 - 1

# Integers beyond this many digits are not a count or a limit anyone means (and int() of a
# 5,000-digit string raises ValueError in recent Pythons).
_MAX_DIGITS = 30


def check(name: str, value: float, *, lo: float | None = None, hi: float | None = None,
          lo_open: bool = False) -> float:
    """`value` if finite and within [lo, hi] (lo excluded when `lo_open`); else BadInput naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{name}: expected a number, got {quote(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput(f"{name}: must be a finite number, got {value}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise BadInput(f"{name}: must be {'>' if lo_open else '>='} {_show(lo)}, got {_show(value)}")
    if hi is not None and value > hi:
        raise BadInput(f"{name}: must be <= {_show(hi)}, got {_show(value)}")
    return value


def _show(v: float) -> str:
    """An int exactly (2^63 - 1, not 9.22337e+18) unless it is too long to show (then cut, as
    errors.quote cuts), a float as %g."""
    if isinstance(v, int):
        return str(v) if v.bit_length() <= 128 else quote(v)
    return f"{v:g}"


def check_seeds(name: str, first: int, runs: int = 1) -> int:
    """`first` if it and every seed derived from it (first + i for i < runs) lie in 0..MAX_SEED."""
    check(name, first, lo=0, hi=MAX_SEED)
    if first + runs - 1 > MAX_SEED:
        raise BadInput(f"{name}: {runs} runs from seed {first} would use seeds up to {first + runs - 1}, "
                       f"past {MAX_SEED} (2^63-1, the largest a run records)")
    return first


def _parse_float(text: str) -> float:
    s = str(text).strip()
    if len(s) > 64:
        raise ValueError("too long")
    v = float(s)
    if not math.isfinite(v):
        raise ValueError("not finite")
    return v


def _parse_int(text: str) -> int:
    s = str(text).strip()
    digits = s.lstrip("+-")
    if not digits.isascii() or not digits.isdigit() or len(digits) > _MAX_DIGITS:
        raise ValueError("not an integer")
    return int(s)


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False
           ) -> Callable[[str], float]:
    """An argparse `type=` for a finite float in range: `type=number(0, lo_open=True)`."""
    return _typed(_parse_float, "a finite number", lo, hi, lo_open)


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An argparse `type=` for an integer in [lo, hi]."""
    return _typed(_parse_int, "an integer", lo, hi, False)


def _typed(parse: Callable[[str], float], what: str, lo: float | None, hi: float | None,
           lo_open: bool) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            v = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        try:
            return check("value", v, lo=lo, hi=hi, lo_open=lo_open)
        except BadInput as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix("value: ") + f" ({text!r})") from None

    convert.__name__ = what.split()[-1]  # argparse names the type in its messages
    return convert


def fraction(hi: int) -> Callable[[str], tuple[int, int]]:
    """An argparse `type=` for "K/N": K of N tries, 1 <= K <= N <= hi (a rate a result must reach)."""

    def convert(text: str) -> tuple[int, int]:
        k_text, sep, n_text = text.partition("/")
        try:
            k, n = _parse_int(k_text.strip()), _parse_int(n_text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected K/N (e.g. 1/2), got {text!r}") from None
        if not sep:
            raise argparse.ArgumentTypeError(f"expected K/N (e.g. 1/2), got {text!r}")
        if not 1 <= n <= hi:
            raise argparse.ArgumentTypeError(f"N must be from 1 to {hi}, got {text!r}")
        if not 1 <= k <= n:
            raise argparse.ArgumentTypeError(f"K must be from 1 to N, got {text!r}")
        return k, n

    convert.__name__ = "fraction"
    return convert


@dataclass(frozen=True)
class Bound:
    """The range of one value, wherever it arrives from: the flag that takes it (`arg()`, an argparse
    type) and every file that carries the same value (`check`) refuse the same numbers, so a schedule
    file cannot ask for the day-long main phase or the million clients the flag refuses."""

    flag: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    integral: bool = False

    def arg(self) -> Callable[[str], float]:
        """The argparse `type=` for the flag."""
        if self.integral:
            lo, hi = (None if b is None else int(b) for b in (self.lo, self.hi))
            return integer(lo, hi)
        return number(self.lo, self.hi, lo_open=self.lo_open)

    def check(self, name: str, value: object) -> Any:
        """`value` if it is a number (an integer when integral) in range; else BadInput naming `name`
        and the flag whose bound it broke."""
        if self.integral and (isinstance(value, bool) or not isinstance(value, int)):
            raise BadInput(f"{name}: expected an integer, got {quote(value)}")
        try:
            return check(name, value, lo=self.lo, hi=self.hi, lo_open=self.lo_open)  # type: ignore[arg-type]
        except BadInput as e:
            raise BadInput(f"{e} (the bound of {self.flag})") from None


# The argparse `type=` of every --seed flag.
seed = integer(0, MAX_SEED)


def finite_json(obj: Any) -> Any:
    """`obj` with every non-finite float replaced by "NaN", "Infinity" or "-Infinity": bare NaN is
    not JSON, and a strict reader (a browser's JSON.parse, jq) rejects the whole document for it."""
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "NaN" if obj != obj else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_json(v) for v in obj]
    return obj
