"""Live progress of a run on the terminal (rich): phase, elapsed time, ops so far.

Draws only on a terminal; elsewhere (CI logs) each phase change prints one plain line, so logs stay
readable. Counting is done by the runner; this only reads the numbers it is handed.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.text import Text

from jepsen_py.analysis import checker_tally, tally_anomalies
from jepsen_py.verdict import basis

if TYPE_CHECKING:
    from jepsen_py.analysis import AnomalyTally


class Progress:
    """`with Progress(test_name, ops_fn) as p: p.phase("main") ...`"""

    def __init__(
        self,
        test_name: str,
        counts: Callable[[], tuple[int, int]] | None = None,
        *,
        enabled: bool = True,
        console: Console | None = None,
    ) -> None:
        self.test_name = test_name
        self.counts = counts or (lambda: (0, 0))
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.live_mode = enabled and self.console.is_terminal
        self.current = "starting"
        self.started = time.monotonic()
        self.phase_started = self.started
        self._live: Live | None = None
        self._lock = threading.Lock()

    def __rich__(self) -> Text:
        ops, ok = self.counts()
        now = time.monotonic()
        t = Text()
        t.append(f"{self.test_name} ", style="bold")
        t.append(f"[{self.current}] ", style="cyan")
        t.append(f"{now - self.started:7.1f}s  phase {now - self.phase_started:6.1f}s  ")
        t.append(f"ops {ops}  ok {ok}")
        return t

    def phase(self, name: str) -> None:
        with self._lock:
            self.current = name
            self.phase_started = time.monotonic()
        if self.enabled and not self.live_mode:
            ops, ok = self.counts()
            print(f"[{time.monotonic() - self.started:7.1f}s] {self.test_name}: {name} "
                  f"(ops {ops}, ok {ok})", file=sys.stderr, flush=True)

    def __enter__(self) -> Progress:
        if self.live_mode:
            self._live = Live(self, console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None


def print_summary(
    *,
    valid: object,
    invokes: int,
    oks: int,
    anomalies: int,
    run_dir: object,
    checkers: dict[str, dict[str, object]] | None = None,
    error: str | None = None,
    title: str = "jepsen-py",
    console: Console | None = None,
) -> None:
    """The short verdict table printed at the end of `run` and `analyze`."""
    from rich.table import Table

    console = console or Console()
    style = "bold " + _verdict_style(valid)
    table = Table(title=title, show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("verdict", Text(str(valid).lower(), style=style))
    table.add_row("ops", str(invokes))
    table.add_row("ok", f"{oks / invokes:.1%}" if invokes else "-")

    # What the checkers say of their anomalies (failing or reported only) when they say it.
    tally = tally_anomalies({"checkers": checkers or {}})
    table.add_row("anomalies", describe_tally(tally) if tally.total else str(anomalies))
    for name, r in (checkers or {}).items():
        v = r.get("valid") if isinstance(r, dict) else None
        word = str(v).lower()
        why = (r.get("error") or r.get("reason")) if isinstance(r, dict) and v == "unknown" else None
        if why:  # an unknown says why, so a gate's log needs no digging in results.json
            word += f" ({why})"
        line = Text(word, style=_verdict_style(v))
        if isinstance(r, dict):
            if (rests_on := basis(r)) is not None:  # what a transactional checker's valid means
                line.append(f" ({rests_on})", style="dim")
            t = checker_tally(r)
            if t.total:
                line.append(f"  {describe_tally(t)}", style="dim")
        table.add_row(f"  {name}", line)
    if error:
        table.add_row("error", Text(error, style="red"))
    table.add_row("stored in", str(run_dir))
    console.print(table)


def describe_tally(t: AnomalyTally) -> str:
    """'3 failing the run (lost 2, duplicate 1); 100 reported only (stale-read 100)', or '0'."""

    def part(counts: dict[str, int], what: str) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"{sum(counts.values())} {what} ({kinds})"

    parts = [part(c, what) for c, what in ((t.failing, "failing the run"), (t.reported, "reported only"))
             if c]
    return "; ".join(parts) or "0"


def _verdict_style(v: object) -> str:
    if v is True:
        return "green"
    if v is False:
        return "red"
    return "yellow"
