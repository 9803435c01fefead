"""Every picture of a run, from its directory: what the runner calls once results.json is written.

Each picture is rendered independently: a failure in one (say, a checker result of an unexpected
shape) is logged and the others are still written, because a half-illustrated failed run is far
more useful than none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from jepsen_py.checkers.pictures.isolation import render_isolation
from jepsen_py.checkers.pictures.linearizability import render_failures
from jepsen_py.checkers.pictures.messages import render_messages
from jepsen_py.checkers.pictures.perf import render_perf
from jepsen_py.checkers.pictures.runview import RunView, load_run
from jepsen_py.checkers.pictures.timeline import render_timeline

log = logging.getLogger(__name__)


def _renderers() -> list[tuple[str, Callable[[RunView], Path | None]]]:
    return [("timeline", render_timeline), ("perf", render_perf), ("linearizability", render_failures),
            ("isolation", render_isolation), ("messages", render_messages)]


def render_run(run_dir: Path) -> list[Path]:
    """Writes timeline.html, perf.html, (when the linearizable checker found failures)
    linearizability.html, (when the Elle checker found anomalies) isolation.html and (for a
    --backend maelstrom run, from its messages.json) messages.html into run_dir; returns the files
    written.

    A missing or malformed history raises BadInput (one line naming the file); a renderer that
    breaks on an odd result is logged and skipped.
    """
    view = load_run(run_dir)
    written: list[Path] = []
    for name, fn in _renderers():
        try:
            out = fn(view)
        except Exception:
            log.exception("rendering %s for %s failed", name, run_dir)
            continue
        if out is not None:
            written.append(out)
    return written
