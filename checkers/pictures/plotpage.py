"""The HTML shell shared by every picture: plotly.js embedded, data as inert JSON, no network.

A run directory is often copied off a CI machine and opened from disk on a plane, so each page
carries its own copy of plotly.js (from the installed plotly package) instead of pointing at a CDN.

Every string a page shows comes from a history, a checker's result, test.json or a plugin, any of
which may hold markup (a client that echoes what it was sent, a hostile DB name). So there is one
way in for each place a string lands: `esc` for HTML text and attributes, `plotly_text` for what
plotly draws (it reads tags and entities in names, hover text, labels), `json_for_script` for data
embedded in a <script>; the pages' scripts get `esc` (plotly text) in JavaScript from `page`, and
build DOM from data with textContent only.
"""

from __future__ import annotations

import functools
import html
import json
from typing import Any

import plotly.offline

from jepsen_py.numbers import finite_json


@functools.cache
def plotly_js() -> str:
    """The plotly.js bundle shipped inside the plotly Python package."""
    return plotly.offline.get_plotlyjs()


def esc(value: Any) -> str:
    """Any value as HTML text or a quoted attribute value: str() of it, & < > " ' escaped."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


_PLOTLY_UNSAFE = {ord(c): f"&#{ord(c)};" for c in "&<>%"}


def plotly_text(value: Any) -> str:
    """Any value as text plotly draws (a trace name, hover template or text, an annotation, a tick
    label): plotly reads a subset of HTML there (<a href>, <span style>, entities) and replaces
    %{...} in hover templates, so & < > % become numeric entities, which plotly shows as the
    characters themselves (with no < left, no tag and so no attribute is ever read). The pages'
    JavaScript `esc` (see `page`) does the same."""
    return (value if isinstance(value, str) else str(value)).translate(_PLOTLY_UNSAFE)


# The JavaScript twin of plotly_text, given to every page's script.
_JS_ESC = "const esc = s => String(s).replace(/[&<>%]/g, c => '&#' + c.charCodeAt(0) + ';');\n"


def json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element: no < > & at all (each written \\u003c, \\u003e,
    \\u0026, which JSON.parse reads back), so no "</script>" or "<!--" in a string ends or bends
    the element early."""
    s = json.dumps(finite_json(data), separators=(",", ":"), default=str, allow_nan=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


BASE_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 1.2em;
       color: #222; }
h1 { font-size: 1.3em; margin: 0.6em 0 0.2em 0; }
.verdict { display: inline-block; padding: 0.1em 0.6em; border-radius: 0.3em; color: white;
           font-weight: bold; }
.verdict-true { background: #2e9b4f; } .verdict-false { background: #c8312e; }
.verdict-unknown { background: #d98b14; }
.meta { color: #555; font-size: 0.9em; }
.controls { margin: 0.4em 0; font-size: 0.9em; }
.controls label { margin-right: 1.2em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
code { font-size: 0.95em; }
"""


def page(title: str, body: str, script: str, data: Any, *, css: str = "") -> str:
    """A complete standalone page; `script` reads its data from DATA (parsed from #page-data) and
    has `esc` for plotly text. `body` must be built with `esc` already."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)}</title>"
        f"<style>{BASE_CSS}{css}</style>"
        f"<script>{plotly_js()}</script>"
        "</head><body>"
        f"{body}"
        f"<script type=\"application/json\" id=\"page-data\">{json_for_script(data)}</script>"
        "<script>\"use strict\";\n"
        "const DATA = JSON.parse(document.getElementById('page-data').textContent);\n"
        f"{_JS_ESC}{script}</script>"
        "</body></html>\n"
    )


def verdict_badge(valid: Any) -> str:
    cls = {True: "true", False: "false"}.get(valid, "unknown") if isinstance(valid, bool) else "unknown"
    text = {"true": "valid", "false": "INVALID", "unknown": "unknown"}[cls]
    return f'<span class="verdict verdict-{cls}" id="verdict">{text}</span>'
