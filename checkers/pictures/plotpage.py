"""The HTML shell shared by every picture: plotly.js embedded, data as inert JSON, no network.

A run directory is often copied off a CI machine and opened from disk on a plane, so each page
carries its own copy of plotly.js (from the installed plotly package) instead of pointing at a CDN.
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


def json_for_script(data: Any) -> str:
    """JSON safe inside <script type="application/json">: no "</" can close the tag early."""
    s = json.dumps(finite_json(data), separators=(",", ":"), default=str, allow_nan=False)
    return s.replace("</", "<\\/").replace("<!--", "<\\!--")


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
    """A complete standalone page; `script` reads its data from JSON.parse(#page-data)."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title>"
        f"<style>{BASE_CSS}{css}</style>"
        f"<script>{plotly_js()}</script>"
        "</head><body>"
        f"{body}"
        f"<script type=\"application/json\" id=\"page-data\">{json_for_script(data)}</script>"
        "<script>\"use strict\";\n"
        "const DATA = JSON.parse(document.getElementById('page-data').textContent);\n"
        f"{script}</script>"
        "</body></html>\n"
    )


def verdict_badge(valid: Any) -> str:
    cls = {True: "true", False: "false"}.get(valid, "unknown") if isinstance(valid, bool) else "unknown"
    text = {"true": "valid", "false": "INVALID", "unknown": "unknown"}[cls]
    return f'<span class="verdict verdict-{cls}" id="verdict">{text}</span>'
