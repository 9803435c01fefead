"""A small local web UI over results/ (Jepsen's `lein run serve`): every run, newest first, its
verdict, workload, nemesis and bugs, and a link to every file it left behind.

Only the standard library's HTTP server: nothing to install on a CI box, and it serves files
strictly from inside the results directory (no path, symlink or `..` leads out of it). It binds to
127.0.0.1 unless told otherwise, because a results directory can hold node logs and addresses.

Everything the index prints comes from the runs' own files, so it is escaped; a run whose test.json
or results.json is damaged is listed as damaged, never breaking the index for the others. Only the
framework's own pages are sent as HTML: any other markup file (a node log a DB plugin named
`x.html`) is sent as plain text, so nothing a system under test wrote runs in this origin.
"""

from __future__ import annotations

import html
import io
import mimetypes
import os
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO

from jepsen_py.errors import BadInput, EnvironmentProblem
from jepsen_py.history import depth_ok
from jepsen_py.store import read_json

RUN_MARKERS = ("test.json", "history.jsonl")
# Pages a person opens first, in this order, ahead of the other files of a run.
PRIMARY = ("timeline.html", "perf.html", "linearizability.html", "isolation.html", "messages.html",
           "results.json",
           "jepsen.log")
TEXT_TYPES = {".jsonl": "text/plain", ".log": "text/plain", ".edn": "text/plain", ".txt": "text/plain",
              ".json": "application/json"}
# The pages the framework writes (pictures, explore's report, the Spark dashboard): the only files
# sent as a type a browser runs, and only where the framework writes them (results/A/B/page), not
# under a run's nodes/ where a DB's log files land with names the DB chose.
PAGES = frozenset({"timeline.html", "perf.html", "linearizability.html", "isolation.html", "messages.html",
                   "report.html", "dashboard.html"})
ACTIVE_TYPES = ("text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml",
                "text/javascript", "application/javascript")
# Fields of test.json the index shows.
SHOWN = ("name", "workload", "nemesis", "bugs", "db_options", "read_mode")


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
    damaged: str = ""  # why test.json or results.json could not be read ("" when they could)

    @property
    def path(self) -> str:
        return f"{self.test}/{self.stamp}"


def _read(path: Path) -> tuple[dict[str, Any], str]:
    """The JSON object in `path` ({} when absent: a run still starting) and, when it is damaged
    (not JSON, nested too deep, not an object), one line saying so."""
    if not path.exists() and not path.is_symlink():
        return {}, ""
    try:
        d = read_json(path)
    except BadInput as e:
        return {}, str(e).replace(str(path), path.name, 1)
    if not isinstance(d, dict):
        return {}, f"{path.name}: not a JSON object"
    return d, ""


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


def _entry(results_dir: Path, test_dir: Path, run_dir: Path) -> RunEntry:
    """One run as the index lists it; what cannot be read of it is named in `damaged`."""
    t, bad_t = _read(run_dir / "test.json")
    r, bad_r = _read(run_dir / "results.json")
    if not all(depth_ok(t.get(k)) for k in SHOWN):  # str() of such a field would overflow the stack
        t, bad_t = {}, "test.json: a field is nested too deep"
    try:
        files = _files(run_dir, results_dir)
    except (OSError, ValueError, RuntimeError) as e:
        files, bad_t = [], bad_t or f"cannot list its files ({type(e).__name__})"
    return RunEntry(
        test=test_dir.name, stamp=run_dir.name, name=str(t.get("name") or test_dir.name),
        time=_stamp_time(run_dir.name), valid=r.get("valid") if r else None,
        workload=_join(t.get("workload")), nemesis=_join(t.get("nemesis")) or "none",
        bugs=_join(t.get("bugs")) or "none", files=files, db_config=db_config(t),
        damaged="; ".join(m for m in (bad_t, bad_r) if m))


def list_runs(results_dir: Path) -> list[RunEntry]:
    """Every run under results_dir/<test>/<stamp>/, newest first (`latest` links skipped). A run
    whose files are damaged is listed with what is wrong, never failing the list."""
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
            runs.append(_entry(results_dir, test_dir, run_dir))
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
tr.damaged td.verdict { background: #6a3d9a; } .damaged-why { color: #6a3d9a; font-size: 0.9em; }
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
        if r.damaged:
            cls, word = cls + " damaged", "damaged"
        why = f'<div class="damaged-why">{e(r.damaged)}</div>' if r.damaged else ""
        base = "/files/" + urllib.parse.quote(r.path)
        links = " ".join(f'<a href="{base}/{urllib.parse.quote(f)}">{e(f)}</a>' for f in r.files)
        rows.append(
            f'<tr class="run {cls}" data-run="{e(r.path)}"><td class="verdict">{word}</td>'
            f'<td><a href="{base}/">{e(r.name)}</a>{why}</td><td>{e(r.time)}</td><td>{e(r.workload)}</td>'
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


# An idle connection (no request, or a request that never finishes) is closed after this long: the
# whole request (request line and headers) must arrive within it, however the bytes trickle in.
IDLE_TIMEOUT_S = 20.0
# Connections served at once (a thread each); one more is answered 503 and closed at once.
MAX_CONNECTIONS = 64
# Bytes of a file sent per write (a file is streamed, never read whole into memory).
CHUNK = 1 << 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _host_name(header: str) -> str:
    """The host of a Host header, without port or IPv6 brackets, lower case."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class _DeadlineReader(io.RawIOBase):
    """The connection as the request parser reads it: every read waits only until the request's
    deadline, so a client that sends one byte at a time cannot hold a connection open for longer
    than a whole request may take (a socket timeout alone restarts with every byte)."""

    def __init__(self, sock: socket.socket, handler: _Handler) -> None:
        super().__init__()
        self.sock = sock
        self.handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        deadline = self.handler.request_deadline
        if deadline is None:
            self.sock.settimeout(self.handler.timeout)
        else:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            self.sock.settimeout(min(left, self.handler.timeout or left))
        return self.sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    server_version = "jepsen-py"
    results_dir: Path  # set on the subclass make_server builds
    allowed_hosts: frozenset[str]  # likewise: the names this server answers to
    timeout = IDLE_TIMEOUT_S  # socket timeout per connection (StreamRequestHandler applies it)
    request_deadline: float | None = None  # time.monotonic() by which the request must be in

    def setup(self) -> None:
        super().setup()
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def handle_one_request(self) -> None:
        self.request_deadline = time.monotonic() + (self.timeout or IDLE_TIMEOUT_S)
        super().handle_one_request()

    def parse_request(self) -> bool:
        ok = super().parse_request()
        # The request is in: the answer is written with the plain per-write timeout.
        self.request_deadline = None
        self.connection.settimeout(self.timeout)
        return ok

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
        except (ConnectionError, TimeoutError):  # the client hung up or stopped reading: nobody to tell
            self.close_connection = True
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
        ctype = content_type(target, root)
        if ctype.startswith("text/") or ctype == "application/json":
            ctype += "; charset=utf-8"
        try:
            f = open(target, "rb")  # noqa: SIM115 (closed below, after the headers are sent)
        except OSError:
            self._not_found()
            return
        with f:
            size = os.fstat(f.fileno()).st_size  # a file still growing is sent as it was now
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(size))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if self.command != "HEAD":
                _copy(f, self.wfile, size)


def content_type(target: Path, root: Path) -> str:
    """The type a file is sent as: by its name, except that markup a browser would run is sent as
    plain text unless it is one of the framework's pages (see PAGES)."""
    ctype = TEXT_TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0] or "text/plain"
    if ctype in ACTIVE_TYPES:
        rel = target.relative_to(root).parts
        if not (target.name in PAGES and len(rel) <= 3):
            ctype = "text/plain"
    return ctype


def _copy(src: BinaryIO, dest: Any, size: int) -> None:
    """Sends `size` bytes of `src` in chunks; a file that shrank meanwhile ends the connection
    short (the client sees a truncated body, not a wrong one)."""
    left = size
    while left > 0:
        chunk = src.read(min(CHUNK, left))
        if not chunk:
            raise ConnectionAbortedError("the file shrank while it was sent")
        dest.write(chunk)
        left -= len(chunk)


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most `max_connections` of them: one more is told 503 and closed
    at once, so a flood of connections cannot pile up threads without end. A client that goes away
    mid-answer is nothing to report; anything else is one line on stderr, never a traceback."""

    daemon_threads = True
    max_connections = MAX_CONNECTIONS

    def __init__(self, address: tuple[str, int], handler: type[_Handler], max_connections: int) -> None:
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _refuse(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        e = sys.exc_info()[1]
        if isinstance(e, ConnectionError | TimeoutError):
            return
        print(f"jepsen-py serve: error answering {client_address}: {type(e).__name__}: {e}", file=sys.stderr)


_BUSY_BODY = b"too many connections; retry\n"
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
         b"Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s"
         % (len(_BUSY_BODY), _BUSY_BODY))


def _refuse(request: socket.socket) -> None:
    """The 503 for a connection beyond the cap, written from the accepting thread: a fresh socket's
    buffer takes it without waiting, and the short timeout bounds the rare case it does not."""
    try:
        request.settimeout(0.5)
        request.sendall(_BUSY)
        request.setblocking(False)
        request.recv(65536)  # what the client already sent: closing on unread bytes would reset the 503
    except OSError:
        pass


def make_server(results_dir: Path | str, host: str = "127.0.0.1", port: int = 8080, *,
                allow_hosts: tuple[str, ...] = (), idle_timeout: float = IDLE_TIMEOUT_S,
                max_connections: int = MAX_CONNECTIONS) -> ThreadingHTTPServer:
    """An HTTP server over results_dir, bound but not yet serving (call serve_forever).

    It answers only requests whose Host header names it: the loopback names, `host` itself and
    `allow_hosts` (the names a browser elsewhere uses to reach a server bound to the network).
    A request must arrive whole within `idle_timeout` seconds; at most `max_connections`
    connections are served at once."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise BadInput(f"{results_dir}: no such results directory")
    allowed = frozenset(_host_name(h) if not h.startswith("[") else h[1:-1]
                        for h in (*LOOPBACK_NAMES, host, *allow_hosts) if h)
    handler = type("Handler", (_Handler,), {"results_dir": results_dir, "allowed_hosts": allowed,
                                            "timeout": idle_timeout})
    try:
        server = _Server((host, port), handler, max_connections)
    except OSError as e:
        raise EnvironmentProblem(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return server


def server_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else str(host)
    return f"http://{shown}:{port}/"
