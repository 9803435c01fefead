"""messages.html, the message flow of a --backend maelstrom run (Maelstrom's messages.svg): written by
a real run into its directory, and drawn in Chromium with an arrow per message and its body on hover."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.pictures.messages import render_messages
from jepsen_py.checkers.pictures.runview import load_run

from jepsen_py import cli
from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.checkers.hostile import PAYLOADS, inert
from tests.checkers.runfixture import make_run
from tests.conftest import require

ECHO = Path(__file__).resolve().parents[2] / "examples" / "maelstrom" / "echo.py"

#: What the page drew: lanes, traces with their drawn lines and markers, and the hover of message 0.
SEEN = """
const gd = document.getElementById('messages');
const traces = Array.from(gd.querySelectorAll('.scatterlayer .trace'));
const out = {ticks: Array.from(gd.querySelectorAll('.xtick text')).map(e => e.textContent),
             faults: DATA.faults.length, counts: document.getElementById('counts').textContent,
             traces: gd.data.map((t, i) => ({name: t.name, symbol: t.marker.symbol,
               lines: traces[i].querySelectorAll('path.js-line').length,
               points: traces[i].querySelectorAll('path.point').length}))};
const first = gd.data.findIndex(t => t.name === arguments[0]);
Plotly.Fx.hover(gd, [{curveNumber: first, pointNumber: 1}]);
out.hover = Array.from(document.querySelectorAll('.hoverlayer .hovertext')).map(e => e.textContent).join(' ');
return out;
"""


@pytest.fixture(scope="module")
def browser() -> Any:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium() as driver:
        yield driver


def test_a_maelstrom_runs_messages_page_draws_each_message_as_an_arrow(browser: Any, tmp_path: Path) -> None:
    assert cli.main(["maelstrom", "--bin", sys.executable, "--bin-arg", str(ECHO), "--workload", "echo",
                     "--node-count", "2", "--time-limit", "2", "--nemesis", "partition",
                     "--nemesis-interval", "0.5", "--results-dir", str(tmp_path), "--no-progress"]) == 0
    run_dir = (tmp_path / "latest").resolve()
    journal = json.loads((run_dir / "messages.json").read_text())
    sent = journal["messages"]
    assert len(sent) >= 6 and journal["unrecorded"] == 0
    assert {m["type"] for m in sent} >= {"init", "init_ok", "echo", "echo_ok"}
    browser.get((run_dir / "messages.html").as_uri())
    wait_rendered(browser)
    assert severe_console_errors(browser) == []
    seen = browser.execute_script(SEEN, "client \u2194 node")
    assert seen["ticks"][:2] == ["c0", "c1"] and seen["ticks"][-2:] == ["n1", "n2"]
    (clients,) = [t for t in seen["traces"] if t["name"] == "client \u2194 node"]
    assert clients["lines"] >= 1 and clients["points"] >= 2 * len(sent) and clients["symbol"] == "arrow"
    assert "body: {" in seen["hover"] and '"type":"init' in seen["hover"] and "c0 \u2192 n" in seen["hover"]
    assert seen["faults"] >= 1 and f"{len(sent)} delivered" in seen["counts"]
    screenshot(browser, "messages")

    # a message a partition dropped ends in an x where the router dropped it
    journal["messages"].append({"sent": 0.5, "landed": 0.6, "outcome": "dropped", "src": "n1",
                                "dest": "n2", "type": "gossip", "msg_id": 7, "in_reply_to": None,
                                "body": '{"type":"gossip"}'})
    (run_dir / "messages.json").write_text(json.dumps(journal))
    browser.get(render_messages(load_run(run_dir), tmp_path / "dropped.html").as_uri())
    wait_rendered(browser)
    seen = browser.execute_script(SEEN, "dropped (partition)")
    (dropped,) = [t for t in seen["traces"] if t["name"] == "dropped (partition)"]
    assert (dropped["symbol"], dropped["lines"], dropped["points"]) == ("x-thin-open", 1, 2)
    assert "gossip n1 \u2192 n2 msg_id 7" in seen["hover"] and "dropped 0.6000 s (100.00 ms)" in seen["hover"]


def test_what_a_node_said_stays_text_on_the_messages_page(browser: Any, tmp_path: Path) -> None:
    """Names, types, ids and bodies come from the user's nodes: shown as written, never run."""
    run = make_run(tmp_path, 20)
    p = PAYLOADS
    journal = {"nodes": ["n1"], "limit": 20000, "unrecorded": 0, "messages": [
        {"sent": 0.1, "landed": 0.2, "outcome": "delivered", "src": p[1], "dest": "n1", "type": p[0],
         "msg_id": p[4], "in_reply_to": 3, "body": json.dumps({"type": p[3]})},
        {"sent": 0.3, "landed": 0.4, "outcome": "dropped", "src": "n1", "dest": p[2], "type": p[5],
         "msg_id": 1, "in_reply_to": None, "body": p[7]}]}
    (run.run_dir / "messages.json").write_text(json.dumps(journal))
    out = render_messages(load_run(run.run_dir))
    assert out is not None and inert(out.read_text(encoding="utf-8"), PAYLOADS, scripts=3) == []
    browser.get(out.as_uri())
    wait_rendered(browser)
    seen = browser.execute_script(SEEN, "service")
    assert severe_console_errors(browser) == []
    foreign = "img, iframe, object, embed, [onerror], [onload]"
    assert browser.execute_script(f"return [typeof window.__pwned, document.querySelectorAll('{foreign}')"
                                  ".length]") == ["undefined", 0]
    assert p[1] in seen["ticks"] and p[2] in seen["ticks"]
    for shown in (p[0], p[1], p[4], p[3]):
        assert shown in seen["hover"], shown


def test_a_run_without_a_journal_gets_no_messages_page(tmp_path: Path) -> None:
    run = make_run(tmp_path, 50)
    assert render_messages(load_run(run.run_dir)) is None
    assert not (run.run_dir / "messages.html").exists()
