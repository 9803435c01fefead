"""The Docker backend against a real engine: provisioning, exec, files, daemons, signals, teardown."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jepsen_py.backends.common import LABEL, RUN_LABEL, RemoteCommandFailed, daemon_argv, safe_name
from jepsen_py.backends.docker import DockerBackend, docker_client
from jepsen_py.errors import EnvironmentProblem
from tests.nemeses.support import make_spec, make_test

ROOT = Path(__file__).resolve().parent.parent.parent


def test_safe_name_and_daemon_argv_have_no_shell():
    assert safe_name("offsets partition/leader!") == "offsets-partition-leader"
    argv = daemon_argv(["python3", "-m", "x", "a b"], pidfile="/p.pid", logfile="/l.log", cwd="/w")
    assert argv[0] == "start-stop-daemon" and "sh" not in argv
    assert argv[-4:] == ["python3", "-m", "x", "a b"]  # arguments pass through untouched


def test_missing_engine_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(EnvironmentProblem, match="no Docker engine reachable"):
        docker_client()
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    out = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "cleanup"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=60)
    assert "Traceback" not in out.stderr + out.stdout
    assert "no Docker engine reachable" in out.stdout


@pytest.fixture(scope="module")
def cluster(node_image, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docker")
    spec = make_spec(["n1", "n2"], tmp, options={"docker_image": node_image, "publish_ports": [8123]})
    test = make_test(spec, tmp)
    backend = DockerBackend(spec)
    test.backend = backend
    test.remotes = backend.setup(test)
    yield test
    backend.teardown(test)


@pytest.mark.docker
def test_containers_and_network_are_labelled(cluster):
    client = docker_client()
    run = cluster.backend.run_id
    flt = {"label": [LABEL, f"{RUN_LABEL}={run}"]}
    containers = client.containers.list(filters=flt)
    assert sorted(c.labels["jepsen-py.node"] for c in containers) == ["n1", "n2"]
    assert [n.name for n in client.networks.list(filters=flt)] == [cluster.backend.network.name]
    assert cluster.remotes["n1"].exec(["hostname"]).stdout.strip() == "n1"


@pytest.mark.docker
def test_exec_argv_env_exit_codes_and_timeout(cluster):
    r = cluster.remotes["n1"]
    res = r.exec(["printf", "%s|", "a b", "$HOME", ";rm -rf /"])
    assert res.stdout == "a b|$HOME|;rm -rf /|", "arguments are never interpreted by a shell"
    assert r.exec(["sh", "-c", 'echo "$X"'], env={"X": "42"}).stdout == "42\n"
    res = r.exec(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    with pytest.raises(RemoteCommandFailed, match="exited 3"):
        r.exec(["sh", "-c", "exit 3"])
    t = time.monotonic()
    res = r.exec(["sleep", "30"], timeout=1, check=False)
    # cut short: well under the 30 s the command would take (a docker exec alone can take seconds
    # on a loaded machine, so the bound is not a few seconds)
    assert res.exit_code != 0 and time.monotonic() - t < 25


@pytest.mark.docker
def test_upload_and_download_files_and_trees(cluster, tmp_path):
    r = cluster.remotes["n2"]
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("alpha")
    (tree / "sub" / "b.bin").write_bytes(bytes(range(256)) * 100)
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "x.pyc").write_bytes(b"junk")
    r.upload(tree, "/srv/deep/tree")
    assert r.exec(["cat", "/srv/deep/tree/a.txt"]).stdout == "alpha"
    assert r.exec(["test", "-e", "/srv/deep/tree/__pycache__"], check=False).exit_code != 0
    r.upload(tree / "a.txt", "/srv/single.txt")
    assert r.exec(["cat", "/srv/single.txt"]).stdout == "alpha"

    r.download("/srv/deep/tree", tmp_path / "back")
    assert (tmp_path / "back" / "sub" / "b.bin").read_bytes() == bytes(range(256)) * 100
    r.download("/srv/single.txt", tmp_path / "one.txt")
    assert (tmp_path / "one.txt").read_text() == "alpha"


@pytest.mark.docker
def test_daemon_signals_and_published_port(cluster):
    r = cluster.remotes["n1"]
    r.start_daemon(["python3", "-m", "http.server", "8123"], pidfile="/run/jp/http.pid",
                   logfile="/var/log/jp/http.log", cwd="/")
    host, port = cluster.backend.client_endpoint("n1", 8123)
    assert host == "127.0.0.1" and port != 8123

    def answers() -> bool:
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                s.settimeout(1)
                s.sendall(b"GET / HTTP/1.0\r\n\r\n")
                return s.recv(12).startswith(b"HTTP/1.0 200")
        except OSError:
            return False

    def wait_answers() -> None:  # bounded, not timed: a loaded machine starts and wakes a daemon late
        deadline = time.monotonic() + 60
        while not answers():
            assert time.monotonic() < deadline, "daemon never answered on the published port"
            time.sleep(0.1)

    wait_answers()
    # A second start of the same daemon is refused rather than doubling it.
    with pytest.raises(RemoteCommandFailed):
        r.start_daemon(["python3", "-m", "http.server", "8123"], pidfile="/run/jp/http.pid",
                       logfile="/var/log/jp/http.log")
    assert r.signal("/run/jp/http.pid", "STOP")
    assert not answers()
    assert r.signal("/run/jp/http.pid", "CONT")
    wait_answers()
    assert r.signal("/run/jp/http.pid", "KILL")
    deadline = time.monotonic() + 60
    while r.signal("/run/jp/http.pid", "0"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not r.signal("/run/jp/http.pid", "KILL"), "no process left to signal"
    assert not r.signal("/run/no-such.pid", "TERM")
    assert "GET /" in r.exec(["cat", "/var/log/jp/http.log"]).stdout


@pytest.mark.docker
def test_peers_reach_each_other_by_peer_address(cluster):
    a = cluster.backend.peer_address("n1")
    code = "import socket,sys; socket.create_connection((sys.argv[1], 22), timeout=2)"
    res = cluster.remotes["n2"].exec(["python3", "-c", code, a], check=False)
    assert "ConnectionRefused" in res.stderr, "n1 must answer (refuse) rather than time out"


@pytest.mark.docker
def test_missing_program_is_exit_127(cluster):
    res = cluster.remotes["n1"].exec(["no-such-program-here"], check=False)
    assert res.exit_code == 127 and "not found" in res.stderr


@pytest.mark.docker
def test_teardown_removes_containers_and_network(node_image, tmp_path):
    spec = make_spec(["n1"], tmp_path, options={"docker_image": node_image})
    test = make_test(spec, tmp_path)
    backend = DockerBackend(spec)
    test.remotes = backend.setup(test)
    run = backend.run_id
    backend.teardown(test)
    client = docker_client()
    flt = {"label": [f"{RUN_LABEL}={run}"]}
    assert client.containers.list(all=True, filters=flt) == []
    assert client.networks.list(filters=flt) == []


@pytest.mark.docker
def test_write_file_creates_parents_replaces_and_sets_the_mode(cluster):
    r = cluster.remotes["n1"]
    r.write_file("/etc/jp-write/deep/conf.txt", "port 1\n")
    assert r.exec(["cat", "/etc/jp-write/deep/conf.txt"]).stdout == "port 1\n"
    r.write_file("/etc/jp-write/deep/conf.txt", b"\x00bytes\n", mode=0o600)
    assert r.exec(["cat", "/etc/jp-write/deep/conf.txt"]).stdout == "\x00bytes\n"
    assert r.exec(["stat", "-c", "%a", "/etc/jp-write/deep/conf.txt"]).stdout.strip() == "600"
    assert r.exec(["stat", "-c", "%a", "/tmp"]).stdout.strip() == "1777"  # parents left as they were
    with pytest.raises(Exception, match="not an absolute path"):
        r.write_file("relative.txt", "x")
