"""linearizability.html: why a key's history cannot be linearized, drawn the way Porcupine draws it.

For each failure the linearizable checker reported ("failures" in its result, shape in this
package's docstring) the page shows the ops around the failure as bars on process lanes, the longest
partial linearization as a numbered path through them with the model state after every step, the
op that could not be placed (red), and each candidate for the next place with the model's reason.

The checker reports only the state at the end of the prefix, so the states along the way are
recomputed here by replaying the prefix through the same model; the replay must end in the reported
state, otherwise the page says it could not reconstruct them instead of showing guesses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jepsen_py.checkers.linearizable.calls import build_calls
from jepsen_py.checkers.linearizable.models import get_model
from jepsen_py.checkers.pictures.plotpage import esc, page, verdict_badge
from jepsen_py.checkers.pictures.runview import NS, RunView, load_run

from jepsen_py.history import Op, Pair
from jepsen_py.store import write_text_atomic

MAX_FAILURES = 20  # per page; the checker caps its own list at 100
MAX_STEPS_SHOWN = 40  # linearization steps drawn before the failure (the table lists all)


def failures_in(results: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(checker name, checker result, failure) for every linearizability failure in results.json."""
    out = []
    checkers = results.get("checkers") if isinstance(results.get("checkers"), dict) else {}
    for name, res in (checkers or {}).items():
        if isinstance(res, dict) and isinstance(res.get("failures"), list):
            out.extend((str(name), res, f) for f in res["failures"] if isinstance(f, dict))
    return out


def _init_candidates(view: RunView, res: dict[str, Any]) -> list[Any]:
    opts = view.test.get("options") if isinstance(view.test.get("options"), dict) else {}
    cands: list[Any] = []
    for v in (res.get("init"), (opts or {}).get("linearizable_init"), None, 0, ""):
        if v not in cands:
            cands.append(v)
    return cands


def replay_states(view: RunView, res: dict[str, Any], failure: dict[str, Any],
                  by_index: dict[int, Pair]) -> list[Any] | None:
    """The model state after each step of the longest linearization, or None when the replay
    through the named model does not reproduce the checker's reported end state."""
    order = [i for i in failure.get("longest_linearization") or [] if isinstance(i, int)]
    if not order:
        return []
    ops: list[Op] = []
    for i in order:
        p = by_index.get(i)
        if p is None:
            return None
        ops.append(p.invoke)
        if p.complete is not None:
            ops.append(p.complete)
    ops.sort(key=lambda o: o.index)
    for init in _init_candidates(view, res):
        try:
            model = get_model(str(res.get("model")), init)
        except Exception:
            continue
        calls = {c.index: c for c in build_calls(ops, model).calls}
        state = model.init()
        states: list[Any] = []
        for i in order:
            c = calls.get(i)
            if c is None:
                break
            ok, nxt = model.step(state, c)
            if not ok:
                break
            state = nxt
            states.append(model.describe_state(state))
        else:
            end = json.dumps(model.describe_state(state), sort_keys=True, default=str)
            if end == json.dumps(failure.get("state_before"), sort_keys=True, default=str):
                return states
    return None


def _short(v: Any, n: int = 60) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, str) else v
    return s if len(s) <= n else s[: n - 1] + "…"


def _as_key(v: Any) -> Any:
    """A candidate's op index as a dict key: a damaged result's list or object becomes its JSON."""
    return json.dumps(v, default=str) if isinstance(v, list | dict) else v


def failure_view(view: RunView, checker: str, res: dict[str, Any], failure: dict[str, Any],
                 by_index: dict[int, Pair]) -> dict[str, Any]:
    """Everything one failure's section draws: bars, the linearization path, states, candidates."""
    op = failure.get("op") if isinstance(failure.get("op"), dict) else {}
    blocked = op.get("index")
    order = [i for i in failure.get("longest_linearization") or [] if isinstance(i, int)]
    states = replay_states(view, res, failure, by_index)
    cand = {_as_key(c.get("op")): c for c in failure.get("candidates") or [] if isinstance(c, dict)}
    shown_steps = order[-MAX_STEPS_SHOWN:]
    first_shown = len(order) - len(shown_steps)
    step_of = {i: k for k, i in enumerate(order)}
    wanted: list[int] = []
    for i in [*shown_steps, *(failure.get("window") or []), *cand, blocked]:
        if isinstance(i, int) and i in by_index and i not in wanted:
            wanted.append(i)
    end = view.end_time
    bars = []
    for i in sorted(wanted, key=lambda i: by_index[i].invoke.time):
        p = by_index[i]
        inv, comp = p.invoke, p.complete
        role = ("blocked" if i == blocked else "linearized" if i in step_of else
                "candidate" if i in cand else "concurrent")
        k = step_of.get(i)
        bars.append({
            "index": i, "process": str(inv.process), "f": inv.f,
            "value": _short(comp.value if comp is not None and comp.value is not None else inv.value),
            "type": comp.type if comp is not None else "info",
            "t0": inv.time / NS, "t1": (comp.time if comp is not None else end * NS) / NS,
            "role": role, "step": k,
            "state": (states[k] if states is not None and k is not None and k < len(states) else None),
            "why": cand[i].get("why") if i in cand else None,
        })
    steps = []
    for k, i in enumerate(order):
        p = by_index.get(i)
        steps.append({
            "step": k + 1, "index": i,
            "process": str(p.invoke.process) if p else "?", "f": p.invoke.f if p else "?",
            "value": _short(p.complete.value if p and p.complete is not None and p.complete.value is not None
                            else (p.invoke.value if p else None)),
            "state": states[k] if states is not None and k < len(states) else None,
        })
    return {
        "checker": checker, "model": res.get("model"), "key": failure.get("key"),
        "op": op, "blocked": blocked, "explanation": failure.get("explanation", ""),
        "state_before": failure.get("state_before"), "states_known": states is not None,
        "candidates": list(cand.values()), "bars": bars, "steps": steps, "first_shown_step": first_shown,
        "fastpath": failure.get("fastpath"),
    }


_CSS = """
.failure { border-top: 2px solid #c8312e; margin-top: 1em; padding-top: 0.4em; }
.fplot { width: 100%; height: 420px; }
.blocked { background: #fbe3e2; padding: 0.4em 0.7em; border-left: 4px solid #c8312e; margin: 0.4em 0; }
.state { font-family: monospace; background: #eef3fb; padding: 0 0.3em; }
details { margin: 0.4em 0; }
tr.final td { background: #eef3fb; font-weight: bold; }
"""

_SCRIPT = (Path(__file__).with_name("linearizability.js")).read_text(encoding="utf-8")


def _table(rows: list[list[str]], head: list[str], last_cls: str = "") -> str:
    """An HTML table of already-escaped cells; `last_cls` marks the last row (the final state)."""
    h = "".join(f"<th>{esc(c)}</th>" for c in head)
    body = []
    for i, r in enumerate(rows):
        cls = f' class="{last_cls}"' if last_cls and i == len(rows) - 1 else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    return f"<table><tr>{h}</tr>{''.join(body)}</table>"


def _section(j: int, fv: dict[str, Any]) -> str:
    e = esc
    op = fv["op"] if isinstance(fv["op"], dict) else {}
    steps_rows = [[str(s["step"]), f"#{s['index']}", e(s["process"]), e(s["f"]), e(s["value"]),
                   f'<span class="state">{e(_short(s["state"], 120))}</span>' if fv["states_known"] else "?"]
                  for s in fv["steps"]]
    cand_rows = [[e(f"#{c.get('op')}"), e(str(c.get("f", ""))), e(_short(c.get("value"))),
                  e(str(c.get("why", "")))] for c in fv["candidates"]]
    states_note = ("" if fv["states_known"] else
                   "<p class=\"meta\">The states along the linearization could not be reconstructed "
                   "(the model's initial state is not recorded in the result); the state at its end is "
                   "the checker's own.</p>")
    return (
        f'<div class="failure" id="failure-{j}"><h2 style="font-size:1.1em">Key '
        f"<code>{e(_short(fv['key'], 100))}</code> · model {e(str(fv['model']))} · checker "
        f"{e(fv['checker'])}</h2>"
        f'<div class="blocked">Cannot be linearized: op <b>#{e(str(op.get("index")))}</b> '
        f"{e(str(op.get('f', '')))} {e(_short(op.get('value')))} by process {e(str(op.get('process')))} "
        f"({e(str(op.get('type', '')))})<br>after {len(fv['steps'])} linearized ops the state is "
        f'<span class="state" id="state-before-{j}">{e(_short(fv["state_before"], 200))}</span><br>'
        f"{e(fv['explanation'] or '')}</div>"
        f'<div class="fplot" id="fplot-{j}"></div>'
        f"{states_note}"
        f"<details open><summary>Candidates for the next place ({len(cand_rows)})</summary>"
        f"{_table(cand_rows, ['op', 'f', 'value', 'why it does not fit'])}</details>"
        f"<details><summary>Longest partial linearization ({len(steps_rows)} ops) and the state after "
        f"each</summary>{_table(steps_rows, ['step', 'op', 'process', 'f', 'value', 'state after'], 'final')}"
        "</details></div>"
    )


def render_failures(view: RunView, out: Path | None = None) -> Path | None:
    """Writes linearizability.html when results.json has linearizability failures; else None."""
    found = failures_in(view.results)
    if not found:
        return None
    out = out or view.run_dir / "linearizability.html"
    by_index: dict[int, Pair] = {}
    for p in view.client_pairs:
        by_index[p.invoke.index] = p
    fvs = [failure_view(view, c, r, f, by_index) for c, r, f in found[:MAX_FAILURES]]
    more = len(found) - len(fvs)
    body = (
        f"<h1>{esc(view.name)} — linearizability failures "
        f"{verdict_badge(view.results.get('valid', 'unknown'))}</h1>"
        f'<div class="meta">run {esc(view.run_dir.name)} · {len(found)} invalid key(s)'
        f"{f' ({more} not drawn)' if more else ''} · <a href=\"timeline.html\">timeline</a> · "
        "bars are ops (invoke to completion) on process lanes; green numbered ops are the longest "
        "order the checker found, the red op is the one that cannot come next, orange ops are the other "
        "candidates; hover a bar for the model state after it</div>"
        + "".join(_section(j, fv) for j, fv in enumerate(fvs))
    )
    write_text_atomic(out, page(f"{view.name} linearizability", body, _SCRIPT, {"failures": fvs}, css=_CSS),
                      fsync=False)
    return out


def render(run_dir: Path | str) -> Path | None:
    """Reads a run directory and writes its linearizability.html (None: nothing to show)."""
    return render_failures(load_run(run_dir))
