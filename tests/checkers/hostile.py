"""A stored run whose every string is hostile, and a check that a page written from it is inert.

`write_run` builds results/<test>/<stamp>/ by hand: a history (op f, processes, keys, values, errors,
nodes, meta roles, observer samples, nemesis values and names), a results.json (a plain checker's
anomalies, an Elle result with a cycle and a non-cycle anomaly, a linearizability failure with its
candidates) and a test.json (name, workload, nemesis, bugs, DB, DB options, read mode), each field
holding one of the given strings in turn. `explore_inputs` and `dashboard_inputs` do the same for
explore's report and Spark's dashboard. `inert` parses a written page and says what in it could run.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from jepsen_py.checkers.pictures.plotpage import plotly_js

from jepsen_py.explore.report import TrialRow
from jepsen_py.history import HistoryWriter, Op

MS = 1_000_000
PWNED = "window.__pwned=1"
# What broke pages before or would break a careless one: plotly's own pseudo-HTML (<b>, <a href>)
# and hover-template %{...}, quotes and ampersands, a script in text, an attribute broken out of, an
# embedded JSON blob's </script>, a JSON-breaking <!--, javascript: URLs. The order matters to
# write_run's rotation: op f gets the first, an anomaly's ops the second.
PAYLOADS = [
    "<b>bold</b> & 'q' \"dq\" %{y} &amp;",
    f"<script>{PWNED}</script>",
    f'"><img src=x onerror="{PWNED}">',
    f"</script><script>{PWNED}</script>",
    f"javascript:{PWNED}",
    "<img src=x onerror=alert(1)>",
    "<!-- c --> <![CDATA[ x ]]>",
    f"<svg onload={PWNED}>",
    f'<a href="javascript:{PWNED}">link</a>',
    "<iframe srcdoc=\"<script>parent.__pwned=1</script>\"></iframe>",
    f"'><style>body{{display:none}}</style><script>{PWNED}</script>",
]
# Every field write_run fills, in the order the strings are handed out.
FIELDS = ("f", "process", "key", "value", "error", "node", "role", "obs_node", "obs_role", "leader", "side",
          "nemesis_f", "test_name", "workload", "nemesis", "bug", "db", "db_key", "db_value", "read_mode",
          "checker", "kind", "explanation", "ops", "elle_kind", "elle_why", "model", "not", "elle_workload",
          "reason", "txn_process", "mop_key", "mop_value", "edge_type", "edge_key", "edge_why", "other_kind",
          "other_key", "other_why", "lin_model", "lin_key", "lin_why", "lin_state", "cand_op", "cand_f",
          "cand_value", "cand_why")


@dataclass
class HostileRun:
    root: Path  # the results directory
    run_dir: Path
    s: dict[str, str]  # which string went into which field


def write_run(root: Path, strings: Sequence[str], *, name: str = "hostile",
              stamp: str = "20261122T031500.000") -> HostileRun:
    """A run directory under `root` whose every field holds one of `strings` in turn."""
    s = dict(zip(FIELDS, itertools.cycle(strings), strict=False))
    d = root / name / stamp
    d.mkdir(parents=True)
    ops: list[Op] = []
    t = 0

    def add(typ: str, process: Any, f: str, key: Any = None, value: Any = None, node: str | None = None,
            error: Any = None, meta: dict[str, Any] | None = None, dt: int = 5) -> int:
        nonlocal t
        t += dt * MS
        ops.append(Op(0, t, typ, process, f, key, value, node, error, meta or {}))
        return len(ops) - 1

    first = add("invoke", 0, s["f"], s["key"], s["value"], s["node"])  # 0
    add("ok", 0, s["f"], s["key"], s["value"], s["node"], None, {"role": s["role"], "term": 1})  # 1
    second = add("invoke", s["process"], "write", s["key"], 1, s["node"])  # 2
    add("info", s["process"], "write", s["key"], 1, s["node"], s["error"])  # 3
    add("invoke", "nemesis", "start-partition")
    add("info", "nemesis", "start-partition", None, {"sides": [[s["side"]], ["n2", "n3"]]})
    add("ok", "observer", "status", None, {"role": s["obs_role"], "term": 2, "leader": s["leader"]},
        s["obs_node"])
    add("invoke", "nemesis", "start-" + s["nemesis_f"])
    add("info", "nemesis", "start-" + s["nemesis_f"], None, {"nodes": [s["side"]]})
    blocked = add("invoke", 0, s["f"], s["key"], None, s["node"])
    add("fail", 0, s["f"], s["key"], None, s["node"], s["error"])
    for i in range(6):  # a few more of the hostile f, for perf's lines
        add("invoke", 1, s["f"], s["key"], i, "n2")
        add("ok", 1, s["f"], s["key"], i, "n2", None, {"role": "leader", "term": 2}, dt=20 + i)
    add("invoke", "nemesis", "stop-partition")
    add("info", "nemesis", "stop-partition", None, {"healed": True})
    with HistoryWriter(d / "history.jsonl") as w:
        for op in ops:
            w.append(op)
    (d / "test.json").write_text(json.dumps({
        "name": s["test_name"], "workload": s["workload"], "nemesis": [s["nemesis"], 7], "bugs": [s["bug"]],
        "db": s["db"], "db_options": {s["db_key"]: s["db_value"]}, "read_mode": s["read_mode"],
        "nodes": [s["node"], "n2", "n3"], "options": {"linearizable_init": s["value"]}}))
    txn = [{"index": first, "process": s["txn_process"], "type": "ok",
            "value": [["append", s["mop_key"], s["mop_value"]]]},
           {"index": second, "process": 7, "type": s["txn_process"],
            "value": [["r", s["mop_key"], [s["mop_value"]]]]}]
    elle = {"valid": False, "consistency_models": [s["model"]], "not": [s["not"]],
            "workload": s["elle_workload"],
            "anomaly_types": [s["elle_kind"], s["other_kind"]], "unknown_reason": s["reason"],
            "anomaly_counts": {s["elle_kind"]: 1, s["other_kind"]: 2},
            "anomalies": [{"kind": s["elle_kind"], "explanation": s["elle_why"], "cycle": txn,
                           "steps": [{"from": first, "to": second, "type": "ww", "key": s["edge_key"],
                                      "explanation": s["edge_why"]},
                                     {"from": second, "to": first, "type": s["edge_type"],
                                      "key": s["edge_key"], "explanation": s["edge_why"]}]},
                          {"kind": s["other_kind"], "ops": [s["ops"], 3], "key": s["other_key"],
                           "explanation": s["other_why"]}],
            "other_anomalies": [{"kind": s["other_kind"], "ops": s["ops"], "explanation": s["other_why"]}]}
    lin = {"valid": False, "model": s["lin_model"], "anomalies": [],
           "failures": [{"key": s["lin_key"], "explanation": s["lin_why"], "state_before": s["lin_state"],
                         "op": {"index": blocked, "f": s["f"], "value": s["value"], "process": s["process"],
                                "type": s["cand_f"]},
                         "longest_linearization": [first], "window": [first, second, blocked],
                         "candidates": [{"op": second, "f": "write", "value": 1, "why": s["cand_why"]},
                                        {"op": s["cand_op"], "f": s["cand_f"], "value": s["cand_value"],
                                         "why": s["cand_why"]}]}]}
    results = {"valid": False, "checkers": {
        s["checker"]: {"valid": False, "anomalies": [{"kind": s["kind"], "ops": [first, blocked],
                                                       "explanation": s["explanation"]}]},
        "elle": elle, "linearizable": lin}}
    (d / "results.json").write_text(json.dumps(results))
    return HostileRun(root, d, s)


def explore_inputs(strings: Sequence[str]) -> tuple[dict[str, Any], list[TrialRow]]:
    """An explore summary and its trials (explore's report.html's inputs), every string hostile."""
    it = itertools.cycle(strings)
    finding = {"kind": next(it), "kinds": {next(it): 2}, "found_after_s": 1.5, "schedules_tried": 2,
               "config": next(it), "original": {next(it): 3}, "shrunk": {next(it): 1},
               "reproduction": next(it), "schedule_file": f"javascript:{PWNED}", "notes": [next(it)],
               "schedule_text": next(it)}
    summary = {"backend": next(it), "seed": next(it), "budget_s": next(it), "db": next(it),
               "bugs": [next(it)], "schedules_tried": next(it), "coverage_features": next(it),
               "errors": next(it), "findings": [finding]}
    trials = [TrialRow(n=1, at_s=1.0, config=next(it), wall_s=1.0, features=3, new=3),
              TrialRow(n=2, at_s=2.0, config=next(it), wall_s=1.0, features=3, new=0, error=next(it)),
              TrialRow(n=3, at_s=3.0, config=next(it), wall_s=1.0, features=5, new=2,
                       anomalies={next(it): 2})]
    return summary, trials


def dashboard_inputs(strings: Sequence[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                        list[dict[str, Any]]]:
    """(summary, trends, runs) as Spark's aggregate hands them to the dashboard, names hostile."""
    it = itertools.cycle(strings)
    summary = []
    for bug in (next(it), "none"):
        summary.append({
            "workload": next(it), "nemesis": next(it), "bug": bug, "read_mode": next(it), "version": next(it),
            "db_options": next(it), "fault_targets": next(it), "nemesis_schedule": next(it), "runs": 2,
            "valid_runs": 1, "invalid_runs": 1, "unknown_runs": 0, "unchecked_runs": 0,
            "detection_rate": 0.5, "availability": 0.9, "longest_unavailable_s": 1.5,
            "latency_p50_ms": 1.0, "latency_p95_ms": 2.0, "latency_p99_ms": 3.0, "throughput": 10.0,
            "anomalies": {next(it): 1}})
    trends = [{"start_day": "2026-11-22", "bug": r["bug"], "nemesis": r["nemesis"], "invalid_runs": 1,
               "runs": 2, "ok_ops": 5, "client_invokes": 6} for r in summary]
    return summary, trends, [{"invokes": 6}, {"invokes": 6}]


# Every tag the framework's pages are made of; a tag outside it came from data.
PAGE_TAGS = {"html", "head", "meta", "title", "style", "script", "body", "h1", "h2", "h3", "div", "span",
             "br", "a", "table", "thead", "tbody", "tr", "th", "td", "code", "ul", "li", "p", "pre", "select",
             "option", "label", "details", "summary", "b", "i", "svg", "defs", "marker", "path", "g", "rect",
             "text", "tspan"}
PAGE_LINKS = {"timeline.html", "perf.html", "linearizability.html", "isolation.html", "/", "../"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.page_data: list[str] = []
        self._in_data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in_data = tag == "script" and ("id", "page-data") in attrs

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self._in_data = False

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.page_data.append(data)


def inert(text: str, hostile: Sequence[str], *, scripts: int) -> list[str]:
    """What in a written page came from data and could run (empty: nothing): a tag or an event
    attribute no page has, a link the page did not make, a script element more than the page's own
    `scripts`, a hostile string with its markup intact, embedded JSON with raw < > & or that does not
    parse back."""
    text = text.replace(plotly_js(), "")
    p = _Tags()
    p.feed(text)
    p.close()
    bad: list[str] = []
    for tag, attrs in p.tags:
        if tag not in PAGE_TAGS:
            bad.append(f"tag <{tag}>")
        for k, v in attrs:
            if k.startswith("on") or k in ("srcdoc", "src", "formaction", "xlink:href"):
                bad.append(f"attribute {k}={v!r} on <{tag}>")
            if k == "href" and v not in PAGE_LINKS and not (v or "").startswith("/files/"):
                bad.append(f"link {v!r}")
    n_scripts = sum(1 for tag, _ in p.tags if tag == "script")
    if n_scripts != scripts:
        bad.append(f"{n_scripts} script elements, not {scripts}")
    bad += [f"raw {h!r}" for h in hostile if "<" in h and h in text]
    for blob in p.page_data:
        if re.search("[<>&]", blob):
            bad.append("raw < > or & in the page's JSON")
        try:
            json.loads(blob)
        except ValueError as e:
            bad.append(f"the page's JSON does not parse: {e}")
    return bad
