"""A small local web UI over results/ (Jepsen's `lein run serve`): every run, newest first, its
verdict, workload, nemesis and bugs, and a link to every file it left behind.

Only the standard library's HTTP server: nothing to install on a CI box, and it serves files
strictly from inside the results directory (no path, symlink or `..` leads out of it). It binds to
127.0.0.1 unless told otherwise, because a results directory can hold node logs and addresses.
"""

from __future__ import annotations

import html
import json
import mimetypes
import os
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jepsen_py.errors import BadInput, EnvironmentProblem

RUN_MARKERS = ("test.json", "history.jsonl")
# Pages a person opens first, in this order, ahead of the other files of a run.
PRIMARY = ("timeline.html", "perf.html", "linearizability.html", "results.json", "jepsen.log")
TEXT_TYPES = {".jsonl": "text/plain", ".log": "text/plain", ".edn": "text/plain", ".txt": "text/plain",
              ".json": "application/json"}


@dataclass(slots=True)
class RunEntry:
    """One run directory as the index lists it."""

    test: str  # the test directory's name
    stamp: str  # the run directory's name (YYYYMMDDTHHMMSS.fff)
    name: str
    time: str  # human readable, UTC
    valid: Any  # True / False / "unknown" / None (no results.json yet: still running or crashed)
    workload: str
    nemesis: str
    bugs: str
    files: list[str]  # paths relative to the run directory
    # What configured the DB: its --db-option settings and read mode, so a weak and a correct
    # configuration of one system are told apart ("" for our cluster's defaults)
    db_config: str = ""

    @property
    def path(self) -> str:
        return f"{self.test}/{self.stamp}"


def _read(path: Path) -> dict[str, Any]:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def _stamp_time(stamp: str) -> str:
    try:
        t = datetime.strptime(stamp.split("-")[0], "%Y%m%dT%H%M%S.%f").replace(tzinfo=UTC)
    except ValueError:
        return stamp
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _join(v: Any) -> str:
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return "" if v is None else str(v)


def _inside(path: Path, root: Path) -> bool:
    """Does `path`, symlinks followed, stay inside `root` (itself resolved)?"""
    try:
        target = path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return False
    return target == root or root in target.parents


def _files(run_dir: Path, root: Path | None = None) -> list[str]:
    """The run's files, paths relative to it; symlinks that lead out of the results directory
    are left out (the server would refuse them anyway: the index does not advertise them)."""
    root = (root or run_dir.parent.parent).resolve()
    out = []
    for base, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(d for d in dirs if _inside(Path(base) / d, root))
        for f in sorted(files):
            p = Path(base) / f
            if p.is_symlink() and not _inside(p, root):
                continue
            out.append(str(p.relative_to(run_dir)))
    first = [f for f in PRIMARY if f in out]
    return first + [f for f in out if f not in first]


def db_config(spec: dict[str, Any]) -> str:
    """test.json's DB settings as one label: `k=v,...` of db_options, then the read mode where the
    DB has one and it is not read-index (our cluster's default)."""
    opts = spec.get("db_options")
    parts = [f"{k}={v}" for k, v in sorted(opts.items())] if isinstance(opts, dict) else []
    mode = spec.get("read_mode")
    if isinstance(mode, str) and mode != "read-index":
        parts.append(f"read-mode={mode}")
    return ",".join(parts)


def list_runs(results_dir: Path) -> list[RunEntry]:
    """Every run under results_dir/<test>/<stamp>/, newest first (`latest` links skipped)."""
    runs: list[RunEntry] = []
    if not results_dir.is_dir():
        return runs
    for test_dir in results_dir.iterdir():
        if not test_dir.is_dir() or test_dir.is_symlink():
            continue
        for run_dir in test_dir.iterdir():
            if run_dir.is_symlink() or not run_dir.is_dir():
                continue
            if not any((run_dir / m).exists() for m in RUN_MARKERS):
                continue
            t = _read(run_dir / "test.json")
            r = _read(run_dir / "results.json")
            runs.append(RunEntry(
                test=test_dir.name, stamp=run_dir.name, name=str(t.get("name") or test_dir.name),
                time=_stamp_time(run_dir.name), valid=r.get("valid") if r else None,
                workload=_join(t.get("workload")), nemesis=_join(t.get("nemesis")) or "none",
                bugs=_join(t.get("bugs")) or "none", files=_files(run_dir, results_dir),
                db_config=db_config(t)))
    runs.sort(key=lambda e: (e.stamp, e.test), reverse=True)
    return runs


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1em 1.5em; color: #222; }
h1 { font-size: 1.3em; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.verdict { color: white; font-weight: bold; text-align: center; }
tr.valid-true td.verdict { background: #2e9b4f; } tr.valid-false td.verdict { background: #c8312e; }
tr.valid-unknown td.verdict { background: #d98b14; } tr.valid-none td.verdict { background: #888; }
.files a { margin-right: 0.7em; }
.meta { color: #666; font-size: 0.9em; }
"""


_FAVICON = (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
            b'<circle cx="8" cy="8" r="7" fill="#c8312e"/></svg>')


def _verdict_class(v: Any) -> tuple[str, str]:
    if v is True:
        return "valid-true", "valid"
    if v is False:
        return "valid-false", "invalid"
    if v is None:
        return "valid-none", "no result"
    return "valid-unknown", "unknown"


def index_html(results_dir: Path) -> str:
    e = html.escape
    runs = list_runs(results_dir)
    rows = []
    for r in runs:
        cls, word = _verdict_class(r.valid)
        base = "/files/" + urllib.parse.quote(r.path)
        links = " ".join(f'<a href="{base}/{urllib.parse.quote(f)}">{e(f)}</a>' for f in r.files)
        rows.append(
            f'<tr class="run {cls}" data-run="{e(r.path)}"><td class="verdict">{word}</td>'
            f'<td><a href="{base}/">{e(r.name)}</a></td><td>{e(r.time)}</td><td>{e(r.workload)}</td>'
            f'<td>{e(r.nemesis)}</td><td>{e(r.bugs)}</td><td class="db">{e(r.db_config)}</td>'
            f'<td class="files">{links}</td></tr>')
    body = "".join(rows) or '<tr><td colspan="8">no runs yet</td></tr>'
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>jepsen-py results</title>'
        f"<style>{_CSS}</style></head><body><h1>jepsen-py results</h1>"
        f'<p class="meta">{e(str(results_dir))} · {len(runs)} run(s), newest first</p>'
        '<table id="runs"><tr><th>verdict</th><th>test</th><th>time</th><th>workload</th><th>nemesis</th>'
        f"<th>bugs</th><th>db settings</th><th>files</th></tr>{body}</table></body></html>\n"
    )


def _dir_html(rel: str, d: Path, root: Path) -> str:
    e = html.escape
    items = sorted((p for p in d.iterdir() if _inside(p, root)), key=lambda p: (not p.is_dir(), p.name))
    links = "".join(
        f'<li><a href="{urllib.parse.quote(p.name)}{"/" if p.is_dir() else ""}">{e(p.name)}'
        f'{"/" if p.is_dir() else ""}</a></li>' for p in items)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{e(rel)}</title>'
            f'<style>{_CSS}</style></head><body><h1>{e(rel)}</h1><p><a href="/">all runs</a> · '
            f'<a href="../">up</a></p><ul>{links}</ul></body></html>\n')


# An idle connection (no request, or a request that never finishes) is closed after this long.
IDLE_TIMEOUT_S = 20.0
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _host_name(header: str) -> str:
    """The host of a Host header, without port or IPv6 brackets, lower case."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class _Handler(BaseHTTPRequestHandler):
    server_version = "jepsen-py"
    results_dir: Path  # set on the subclass make_server builds
    allowed_hosts: frozenset[str]  # likewise: the names this server answers to
    timeout = IDLE_TIMEOUT_S  # socket timeout per connection (StreamRequestHandler applies it)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a browser's requests would drown the one line that says where we serve

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _not_found(self) -> None:
        self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        """Answers, or refuses with a status: a bad request never escapes as a traceback."""
        host = self.headers.get("Host")
        if host is None or _host_name(host) not in self.allowed_hosts:
            # A page on another site that rebinds its DNS name to this address arrives with its own
            # name here: answering it would hand results to that site.
            self._send(HTTPStatus.MISDIRECTED_REQUEST, b"unknown host\n", "text/plain; charset=utf-8")
            return
        try:
            self._get()
        except (ValueError, OSError, UnicodeError, RuntimeError):
            self._send(HTTPStatus.BAD_REQUEST, b"bad request\n", "text/plain; charset=utf-8")

    def _get(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if path == "/favicon.ico":
            self._send(HTTPStatus.OK, _FAVICON, "image/svg+xml")
            return
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, index_html(self.results_dir).encode(), "text/html; charset=utf-8")
            return
        if not path.startswith("/files/"):
            self._not_found()
            return
        rel = path[len("/files/"):]
        if "\x00" in rel or any(ord(c) < 32 for c in rel):
            self._send(HTTPStatus.BAD_REQUEST, b"bad path\n", "text/plain; charset=utf-8")
            return
        root = self.results_dir.resolve()
        target = (root / rel).resolve()
        if target != root and root not in target.parents:
            self._not_found()  # outside results/: same answer as absent, nothing to probe
            return
        if target.is_dir():
            if not path.endswith("/"):
                self.send_response(HTTPStatus.MOVED_PERMANENTLY)
                self.send_header("Location", url.path + "/")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._send(HTTPStatus.OK, _dir_html(rel, target, root).encode(), "text/html; charset=utf-8")
            return
        if not target.is_file():
            self._not_found()
            return
        ctype = TEXT_TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0] or "text/plain"
        if ctype.startswith("text/") or ctype == "application/json":
            ctype += "; charset=utf-8"
        try:
            body = target.read_bytes()
        except OSError:
            self._not_found()
            return
        self._send(HTTPStatus.OK, body, ctype)


def make_server(results_dir: Path | str, host: str = "127.0.0.1", port: int = 8080, *,
                allow_hosts: tuple[str, ...] = (), idle_timeout: float = IDLE_TIMEOUT_S
                ) -> ThreadingHTTPServer:
    """An HTTP server over results_dir, bound but not yet serving (call serve_forever).

    It answers only requests whose Host header names it: the loopback names, `host` itself and
    `allow_hosts` (the names a browser elsewhere uses to reach a server bound to the network)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise BadInput(f"{results_dir}: no such results directory")
    allowed = frozenset(_host_name(h) if not h.startswith("[") else h[1:-1]
                        for h in (*LOOPBACK_NAMES, host, *allow_hosts) if h)
    handler = type("Handler", (_Handler,), {"results_dir": results_dir, "allowed_hosts": allowed,
                                            "timeout": idle_timeout})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as e:
        raise EnvironmentProblem(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    server.daemon_threads = True
    return server


def server_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else str(host)
    return f"http://{shown}:{port}/"
