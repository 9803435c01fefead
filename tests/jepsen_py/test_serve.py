"""`jepsen-py serve` over a real results directory, browsed with headless Chromium, plus the HTTP
edges a browser never shows (path traversal, symlinks out, content types, the CLI's lifecycle)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.pictures.render import render_run

from jepsen_py.web import list_runs, make_server, server_url
from tests.browser import chromium, chromium_available, screenshot, severe_console_errors, wait_rendered
from tests.checkers.runfixture import make_run
from tests.conftest import require


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    bad = make_run(root, 300, name="offsets-partition-leader", stamp="20261122T031500.000")
    render_run(bad.run_dir)
    good = make_run(root, 200, name="topics-kill", stamp="20261122T041000.000", seed=3)
    r = json.loads((good.run_dir / "results.json").read_text())
    r["valid"] = True
    (good.run_dir / "results.json").write_text(json.dumps(r))
    t = json.loads((good.run_dir / "test.json").read_text())
    t.update(name="topics-kill", workload="topics", nemesis=["kill"], bugs=[])
    (good.run_dir / "test.json").write_text(json.dumps(t))
    render_run(good.run_dir)
    # a run still going (no results.json yet) and the store's latest links
    running = make_run(root, 50, name="topics-kill", stamp="20261122T042000.000")
    (running.run_dir / "results.json").unlink()
    (root / "topics-kill" / "latest").symlink_to("20261122T042000.000")
    (root / "latest").symlink_to("topics-kill/20261122T042000.000")
    node_dir = bad.run_dir / "nodes" / "n1"
    node_dir.mkdir(parents=True)
    (node_dir / "node.log").write_text("hi\n")
    return root


@pytest.fixture(scope="module")
def server(results: Path) -> Iterator[str]:
    srv = make_server(results, "127.0.0.1", 0)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield server_url(srv)
    srv.shutdown()
    srv.server_close()


def _get(url: str) -> tuple[int, str, bytes]:
    try:  # the timeout bounds a hang; a page rendered on a loaded machine may take seconds
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def test_list_runs_newest_first(results: Path) -> None:
    runs = list_runs(results)
    assert [(r.test, r.stamp) for r in runs] == [
        ("topics-kill", "20261122T042000.000"), ("topics-kill", "20261122T041000.000"),
        ("offsets-partition-leader", "20261122T031500.000")]
    assert [r.valid for r in runs] == [None, True, False]
    assert runs[2].files[:3] == ["timeline.html", "perf.html", "results.json"]
    assert "nodes/n1/node.log" in runs[2].files
    assert runs[2].time == "2026-11-22 03:15:00 UTC"


def test_index_as_seen_and_links_open(server: str) -> None:
    require("chromium + chromedriver + selenium", chromium_available())
    with chromium(1500, 700) as b:
        b.get(server)
        rows = b.execute_script("""
            return Array.from(document.querySelectorAll('tr.run')).map(r => ({
              run: r.dataset.run, cells: Array.from(r.querySelectorAll('td')).map(c => c.textContent),
              bg: getComputedStyle(r.querySelector('td.verdict')).backgroundColor,
              links: Array.from(r.querySelectorAll('.files a')).map(a => a.textContent)}));""")
        assert [r["run"] for r in rows] == [
            "topics-kill/20261122T042000.000", "topics-kill/20261122T041000.000",
            "offsets-partition-leader/20261122T031500.000"]
        assert [r["cells"][0] for r in rows] == ["no result", "valid", "invalid"]
        assert rows[1]["bg"] == "rgb(46, 155, 79)" and rows[2]["bg"] == "rgb(200, 49, 46)"
        assert rows[2]["cells"][1:6] == ["offsets-partition-leader", "2026-11-22 03:15:00 UTC", "offsets",
                                         "partition-leader", "zombie-leader"]
        assert rows[1]["cells"][4:6] == ["kill", "none"]
        assert {"timeline.html", "perf.html", "history.jsonl", "test.json", "nodes/n1/node.log"} <= set(
            rows[2]["links"])
        screenshot(b, "serve-index")
        assert severe_console_errors(b) == []
        # follow the invalid run's timeline link: the picture renders from the server
        b.execute_script("""
            Array.from(document.querySelectorAll('tr.run')).pop().querySelector('.files a').click();""")
        wait_rendered(b)
        assert b.current_url.endswith("/files/offsets-partition-leader/20261122T031500.000/timeline.html")
        assert b.execute_script("return document.querySelectorAll('#anomalies li').length") == 3
        assert severe_console_errors(b) == []


def test_files_stay_inside_results(server: str, results: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    (results / "offsets-partition-leader" / "escape").symlink_to(tmp_path)
    for path in ("files/../../../etc/passwd", "files/%2e%2e/%2e%2e/etc/passwd",
                 "files/offsets-partition-leader/escape/secret.txt", "files/..%2f..%2fetc%2fpasswd",
                 "etc/passwd", "files/nope/x"):
        status, _, body = _get(server + path)
        assert status == 404, path
        assert b"do not serve" not in body and b"root:" not in body
    status, ctype, body = _get(server + "files/offsets-partition-leader/20261122T031500.000/history.jsonl")
    assert status == 200 and ctype.startswith("text/plain") and body.startswith(b'{"index":0')
    status, ctype, _ = _get(server + "files/offsets-partition-leader/20261122T031500.000/timeline.html")
    assert status == 200 and ctype.startswith("text/html")
    status, _, body = _get(server + "files/topics-kill/latest/")  # the latest link inside results/ works
    assert status == 200 and b"history.jsonl" in body


def test_cli_binds_loopback_serves_and_stops_on_ctrl_c(results: Path) -> None:
    # SIGINT restored to its default in the child: a script that starts the tests in the background
    # hands them SIGINT ignored, and Python keeps an inherited "ignore" (no KeyboardInterrupt).
    proc = subprocess.Popen([sys.executable, "-m", "jepsen_py.cli", "serve", "--port", "0", "--results-dir",
                             str(results)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith(f"serving {results} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        status, _, body = _get(url)
        assert status == 200 and b"offsets-partition-leader" in body
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_errors_are_one_line(results: Path, tmp_path: Path) -> None:
    def run(*args: str) -> Any:
        return subprocess.run([sys.executable, "-m", "jepsen_py.cli", "serve", *args], capture_output=True,
                              text=True, timeout=30, env={**os.environ, "PYTHONPATH": os.getcwd()})

    r = run("--results-dir", str(tmp_path / "none"))
    assert r.returncode == 254 and r.stderr.strip().count("\n") == 0
    assert "no such results directory" in r.stderr
    srv = make_server(results, "127.0.0.1", 0)
    try:
        r = run("--port", str(srv.server_address[1]), "--results-dir", str(results))
        assert r.returncode == 254 and "cannot listen on 127.0.0.1:" in r.stderr
        assert "Traceback" not in r.stderr
    finally:
        srv.server_close()
    r = run("--port", "70000", "--results-dir", str(results))
    assert r.returncode == 254 and "--port" in r.stderr and "Traceback" not in r.stderr


def _raw(url: str, request: bytes, timeout: float = 60) -> bytes:
    """Sends `request` as is on a fresh connection; returns everything the server answers."""
    host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            got = sock.recv(65536)
            if not got:
                return b"".join(chunks)
            chunks.append(got)


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0


def test_bad_paths_are_400_or_404_and_the_server_lives_on(server: str) -> None:
    for path in ("/files/offsets-partition-leader/%00", "/files/%00/x", "/files/a%0ab",
                 "/files/offsets-partition-leader/20261122T031500.000/%ff%fe", "/files/" + "a/" * 3000):
        answer = _raw(server, f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert _status(answer) in (400, 404), (path, answer[:80])
        assert b"Traceback" not in answer
    assert _get(server)[0] == 200


def test_only_the_bound_host_names_are_answered(server: str) -> None:
    port = urllib.parse.urlsplit(server).port
    for host, want in ((f"127.0.0.1:{port}", 200), (f"localhost:{port}", 200), ("localhost", 200),
                       ("evil.example", 421), (f"evil.example:{port}", 421), ("127.0.0.1.evil.example", 421)):
        answer = _raw(server, f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
        assert _status(answer) == want, host
        assert (b"offsets-partition-leader" in answer) == (want == 200)
    assert _status(_raw(server, b"GET / HTTP/1.0\r\n\r\n")) == 421  # no Host at all


def test_allow_host_adds_a_name(results: Path) -> None:
    srv = make_server(results, "127.0.0.1", 0, allow_hosts=("ci-box.internal",))
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        answer = _raw(server_url(srv), b"GET / HTTP/1.0\r\nHost: ci-box.internal:8080\r\n\r\n")
        assert _status(answer) == 200
    finally:
        srv.shutdown()
        srv.server_close()


def test_an_idle_connection_is_closed(results: Path) -> None:
    srv = make_server(results, "127.0.0.1", 0, idle_timeout=1.0)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        t0 = time.monotonic()
        assert _raw(server_url(srv), b"", timeout=30) == b""  # nothing sent: the server hangs up
        assert time.monotonic() - t0 < 10
        t0 = time.monotonic()
        _raw(server_url(srv), b"GET / HTTP/1.1\r\nHost: localhost\r\n", timeout=30)  # never finished
        assert time.monotonic() - t0 < 10
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_index_leaves_out_symlinks_that_lead_outside(tmp_path: Path) -> None:
    root = tmp_path / "results"
    run = make_run(root, 20, name="t1", stamp="20261122T050000.000")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "key.txt").write_text("secret")
    (run.run_dir / "leak.txt").symlink_to(outside / "key.txt")
    (run.run_dir / "leakdir").symlink_to(outside)
    (run.run_dir / "inner.json").symlink_to(run.run_dir / "test.json")
    [entry] = list_runs(root)
    assert "leak.txt" not in entry.files and not any(f.startswith("leakdir") for f in entry.files)
    assert "inner.json" in entry.files
    srv = make_server(root, "127.0.0.1", 0)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        status, _, body = _get(server_url(srv) + "files/t1/20261122T050000.000/")
        assert status == 200 and b"leak" not in body and b"inner.json" in body
        status, _, body = _get(server_url(srv))
        assert b"leak" not in body
    finally:
        srv.shutdown()
        srv.server_close()


_DRIP = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Drip: " + b"a" * 100


def _closed_within(sock: socket.socket, seconds: float, drip: bytes = b"",
                   every: float = 0.0) -> float | None:
    """Sends `drip` one byte per `every` s (or nothing) and waits for the server to close the
    connection; returns after how long, or None if it stayed open for `seconds`."""
    t0 = time.monotonic()
    sock.settimeout(every or seconds)
    i = 0
    while time.monotonic() - t0 < seconds:
        if i < len(drip):
            try:
                sock.sendall(drip[i:i + 1])
            except OSError:
                return time.monotonic() - t0
            i += 1
        try:
            if sock.recv(65536) == b"":
                return time.monotonic() - t0
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - t0
    return None


def test_a_request_trickled_in_is_cut_at_its_deadline(results: Path) -> None:
    """The idle timeout bounds the whole request, not each read: one byte every 0.3 s keeps every
    read well inside a 1 s timeout, yet the connection is closed about a second in."""
    srv = make_server(results, "127.0.0.1", 0, idle_timeout=1.0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(srv.server_address[:2], timeout=30) as sock:
            closed = _closed_within(sock, 8.0, _DRIP, 0.3)
        assert closed is not None and closed < 4.0, closed
        assert _get(server_url(srv))[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture()
def big_results(tmp_path: Path) -> Path:
    """A results directory with a large file to download."""
    big = make_run(tmp_path / "results", 20, name="big", stamp="20261122T060000.000")
    with open(big.run_dir / "jepsen.log", "wb") as f:
        f.write(os.urandom(1 << 20) * 16)
    return tmp_path / "results"


@contextlib.contextmanager
def _serve(root: Path, *flags: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A real `jepsen-py serve` on an ephemeral port of 127.0.0.1: its URL and process."""
    proc = subprocess.Popen([sys.executable, "-m", "jepsen_py.cli", "serve", "--port", "0", "--results-dir",
                             str(root), *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert " at http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield line.split(" at ")[1].split()[0], proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture()
def served(big_results: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`serve` with a 1 s request deadline and room for two connections."""
    with _serve(big_results, "--request-timeout", "1", "--max-connections", "2") as s:
        yield s


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0
    return proc.stderr.read() if proc.stderr else ""


def test_cli_cuts_a_trickled_request_at_its_deadline(served: tuple[str, subprocess.Popen[str]]) -> None:
    url, proc = served
    port = urllib.parse.urlsplit(url).port
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        closed = _closed_within(sock, 8.0, _DRIP, 0.3)
    assert closed is not None and closed < 4.0, closed
    assert _get(url)[0] == 200
    assert "Traceback" not in _stop(proc)


def test_cli_caps_concurrent_connections(served: tuple[str, subprocess.Popen[str]]) -> None:
    url, proc = served
    port = urllib.parse.urlsplit(url).port
    held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(2)]
    try:
        for sock in held:  # both taken: a request begun, never finished
            sock.sendall(b"GET / HTTP/1.1\r\n")
        time.sleep(0.2)
        answer = _raw(url, b"", timeout=30)
        assert _status(answer) == 503 and b"too many connections" in answer
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 10  # the slots come back once those connections are gone
    while _get(url)[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _get(url)[0] == 200
    assert "Traceback" not in _stop(proc)


def test_cli_a_client_hanging_up_mid_download_is_no_traceback(big_results: Path) -> None:
    with _serve(big_results) as (url, proc):
        _hang_up_mid_download(url, proc)


def _hang_up_mid_download(url: str, proc: subprocess.Popen[str]) -> None:
    port = urllib.parse.urlsplit(url).port
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"GET /files/big/20261122T060000.000/jepsen.log HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert _status(sock.recv(4096)) == 200
            # a reset, not a polite close: what a browser tab closed mid-download does
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.5)
    status, _, body = _get(url + "files/big/20261122T060000.000/jepsen.log")
    assert status == 200 and len(body) == 16 << 20
    err = _stop(proc)
    assert "Traceback" not in err and "Exception" not in err, err
