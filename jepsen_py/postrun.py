"""The post-run steps the command line asks for after the analysis: pictures and Parquet. On top of
the layers because the Parquet export is Spark's; each step loads its library (plotly, pyarrow) only
when it runs, so the command line starts without them."""

from __future__ import annotations

from pathlib import Path

from jepsen_py.analysis import PostRun


def render_pictures(run_dir: Path) -> None:
    """timeline.html, perf.html, linearizability.html / isolation.html when a checker found
    non-linearizable keys / isolation anomalies, and messages.html for a --backend maelstrom run."""
    from jepsen_py.checkers.pictures.render import render_run

    render_run(run_dir)


def export_parquet(run_dir: Path) -> None:
    """The run's ops and verdicts as Parquet, ready for `jepsen-py aggregate`."""
    from jepsen_py.spark.export import export_run

    export_run(run_dir)


#: What the CLI (`run`, `analyze`) passes as post-run steps; tests driving run_test pass none.
CLI_POST_RUN: tuple[PostRun, ...] = (render_pictures, export_parquet)
