"""The SSH backend against real sshd in containers, host key checking on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.backends.common import RemoteCommandFailed
from jepsen_py.backends.ssh import (
    DAEMONS_DIR,
    DaemonRecord,
    SSHBackend,
    SSHOptions,
    SSHRemote,
    end_recorded_daemons,
    parse_records,
    parse_stat,
    record_path,
)
from jepsen_py.errors import BadInput, EnvironmentProblem
from jepsen_py.spec import TestSpec
from tests.nemeses.support import make_spec, make_test
from tests.sshd import sshd_hosts

NODES = ["n1", "n2"]
DIRDB = "tests.jepsen_py.dirdb:DirDB"


def test_options_from_spec(tmp_path):
    spec = make_spec(NODES, tmp_path, options={"ssh_host": ["n1=127.0.0.1:2201", "n2=[::1]:2202"],
                                               "ssh_user": "admin"})
    o = SSHOptions.from_spec(spec)
    assert o.address("n1") == ("127.0.0.1", 2201) and o.address("n2") == ("::1", 2202)
    assert o.use_sudo and o.strict
    assert SSHOptions().address("db7") == ("db7", 22) and not SSHOptions().use_sudo
    with pytest.raises(BadInput, match="NODE=HOST"):
        SSHOptions.from_spec(make_spec(NODES, tmp_path, options={"ssh_host": ["n1"]}))
    with pytest.raises(BadInput, match="not in --nodes"):
        SSHBackend(make_spec(NODES, tmp_path, options={"ssh_host": ["n9=h"]}))


def test_command_quotes_every_argument():
    r = SSHRemote("n1", SSHOptions(user="admin", password="pw"))
    line = r.command(["printf", "%s", "a b; rm -rf /", "$(id)"], env={"X": "1 2"})
    assert line == "sudo -S -k -p '' -- env 'X=1 2' printf %s 'a b; rm -rf /' '$(id)'"
    assert SSHRemote("n1", SSHOptions(user="admin")).command(["id"]) == "sudo -n -- id"


@pytest.fixture(scope="module")
def sshd(node_image, tmp_path_factory):
    """Two containers running sshd, each with its own host key; a client key and known_hosts."""
    with sshd_hosts(node_image, tmp_path_factory.mktemp("ssh"), NODES) as hosts:
        yield {"backend": hosts.backend, "tmp": hosts.tmp, "key": hosts.key, "known": hosts.known,
               "hosts": list(hosts.hosts)}


def ssh_spec(sshd, **extra):
    opts = {"ssh_host": sshd["hosts"], "ssh_key": sshd["key"], "ssh_known_hosts": sshd["known"]}
    opts.update(extra)
    return make_spec(NODES, sshd["tmp"], backend="ssh", options=opts)


@pytest.mark.docker
def test_exec_upload_download_daemon_with_host_key_checking(sshd, tmp_path):
    spec = ssh_spec(sshd)
    backend = SSHBackend(spec)
    remotes = backend.setup(make_test(spec, tmp_path))
    try:
        r = remotes["n1"]
        assert r.exec(["hostname"]).stdout.strip() == "n1"
        assert r.exec(["printf", "%s|", "a b", "$HOME", ";x"]).stdout == "a b|$HOME|;x|"
        assert r.exec(["sh", "-c", 'echo "$Y"'], env={"Y": "7"}).stdout == "7\n"
        with pytest.raises(RemoteCommandFailed, match="exited 4"):
            r.exec(["sh", "-c", "exit 4"])
        t = time.monotonic()
        assert r.exec(["sleep", "30"], timeout=1, check=False).exit_code != 0
        assert time.monotonic() - t < 25  # cut short of the 30 s; an ssh exec under load takes seconds

        tree = tmp_path / "tree"
        (tree / "d").mkdir(parents=True)
        (tree / "d" / "f.txt").write_text("payload")
        r.upload(tree, "/opt/up/tree")
        assert r.exec(["cat", "/opt/up/tree/d/f.txt"]).stdout == "payload"
        r.download("/opt/up/tree", tmp_path / "back")
        assert (tmp_path / "back" / "d" / "f.txt").read_text() == "payload"
        r.write_file("/opt/written/deep/conf.txt", "port 1\n", mode=0o600)
        assert r.exec(["cat", "/opt/written/deep/conf.txt"]).stdout == "port 1\n"
        assert r.exec(["stat", "-c", "%a", "/opt/written/deep/conf.txt"]).stdout.strip() == "600"

        r.start_daemon(["sleep", "300"], pidfile="/run/t/s.pid", logfile="/var/log/t/s.log")
        assert r.signal("/run/t/s.pid", "0")
        # recorded on the host for cleanup: its pid, start time, boot and pidfile
        [rec] = parse_records(r.exec(["grep", "-r", "-H", "", DAEMONS_DIR]).stdout)
        assert rec.path == record_path("/run/t/s.pid") and rec.pidfile == "/run/t/s.pid"
        assert str(rec.pid) == r.exec(["cat", "/run/t/s.pid"]).stdout.strip()
        assert rec.start == parse_stat(r.exec(["cat", f"/proc/{rec.pid}/stat"]).stdout).start
        assert r.signal("/run/t/s.pid", "KILL")
        deadline = time.monotonic() + 60  # a bound on a hang: each probe is an ssh exec
        while r.signal("/run/t/s.pid", "0"):
            assert time.monotonic() < deadline
            time.sleep(0.05)

        # The peer address is what the node itself has, the container's address on its network.
        assert backend.peer_address("n2") == sshd["backend"].peer_address("n2")
    finally:
        backend.teardown(None)
    # the daemon ended, so teardown dropped its record: the host is left as found
    assert sshd["backend"].remotes["n1"].exec(["ls", "/var/lib/jepsen-py"], check=False).exit_code != 0


@pytest.mark.docker
def test_unknown_host_key_is_refused_unless_checking_is_off(sshd, tmp_path):
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(EnvironmentProblem, match=r"not in .*no-strict-host-key-checking"):
        SSHBackend(ssh_spec(sshd, ssh_known_hosts=str(empty))).setup(None)
    backend = SSHBackend(ssh_spec(sshd, ssh_known_hosts=str(empty), strict_host_key_checking=False))
    remotes = backend.setup(None)
    assert remotes["n2"].exec(["hostname"]).stdout.strip() == "n2"
    backend.teardown(None)


@pytest.mark.docker
def test_changed_host_key_is_refused(sshd, tmp_path):
    lines = Path(sshd["known"]).read_text().splitlines()
    # Give n1's entry n2's key: the real n1 then presents a key that does not match.
    n1_host = lines[0].split()[0]
    swapped = tmp_path / "known_hosts"
    swapped.write_text(f"{n1_host} {' '.join(lines[1].split()[1:])}\n")
    with pytest.raises(EnvironmentProblem, match="does not match"):
        SSHBackend(ssh_spec(sshd, ssh_known_hosts=str(swapped))).setup(None)


def password_spec(sshd: dict[str, Any]) -> TestSpec:
    """The fixture's hosts as the non-root user `jepsen`, by password (sudo on by default)."""
    return make_spec(NODES, sshd["tmp"], backend="ssh", options={
        "ssh_host": sshd["hosts"], "ssh_user": "jepsen", "ssh_password": "s3cret",
        "ssh_known_hosts": sshd["known"]})


@pytest.mark.docker
def test_password_login_and_sudo(sshd):
    spec = password_spec(sshd)
    backend = SSHBackend(spec)
    remotes = backend.setup(None)
    try:
        assert remotes["n1"].exec(["id", "-u"]).stdout.strip() == "0", "commands run through sudo"
        no_sudo = SSHBackend(make_spec(NODES, sshd["tmp"], backend="ssh", options={
            "ssh_host": sshd["hosts"], "ssh_user": "jepsen", "ssh_password": "s3cret",
            "ssh_known_hosts": sshd["known"], "ssh_sudo": False})).setup(None)
        assert no_sudo["n1"].exec(["id", "-un"]).stdout.strip() == "jepsen"
        no_sudo["n1"].close()
    finally:
        backend.teardown(None)
    bad = make_spec(NODES, sshd["tmp"], backend="ssh", options={
        "ssh_host": sshd["hosts"], "ssh_user": "jepsen", "ssh_password": "wrong",
        "ssh_known_hosts": sshd["known"]})
    with pytest.raises(EnvironmentProblem, match="authentication failed"):
        SSHBackend(bad).setup(None)


@pytest.mark.docker
@pytest.mark.parametrize("user", ["jepsen", "nopw"])
def test_the_sudo_password_never_reaches_the_command(sshd, user):
    """sudo gets the password on stdin only when it asks for one (-S -k); with NOPASSWD it runs
    with -n and the command's stdin stays empty."""
    spec = make_spec(NODES, sshd["tmp"], backend="ssh", options={
        "ssh_host": sshd["hosts"], "ssh_user": user, "ssh_password": "s3cret",
        "ssh_known_hosts": sshd["known"]})
    backend = SSHBackend(spec)
    remotes = backend.setup(None)
    try:
        r = remotes["n1"]
        for _ in range(2):  # the second time sudo may hold cached credentials
            res = r.exec(["cat"])
            assert "s3cret" not in res.stdout and res.stdout == ""
            assert r.exec(["id", "-u"]).stdout.strip() == "0"
        assert r.sudo_mode() == ("-n" if user == "nopw" else "-S")
    finally:
        backend.teardown(None)


@pytest.mark.docker
def test_broken_connection_is_reopened(sshd):
    backend = SSHBackend(ssh_spec(sshd))
    r = backend.setup(None)["n1"]
    try:
        r._client.get_transport().close()  # as if the network dropped the connection
        assert r.exec(["echo", "back"]).stdout == "back\n"
    finally:
        backend.teardown(None)


@contextlib.contextmanager
def _hosts_left_partitioned(sshd, tmp_path) -> Iterator[Any]:
    """A test whose two hosts were partitioned by a controller that then died: the rules stay."""
    from jepsen_py.nemeses.partition import PartitionNemesis

    from jepsen_py.history import Op

    spec = ssh_spec(sshd)
    test = make_test(spec, tmp_path)
    test.backend = SSHBackend(spec)
    test.remotes = test.backend.setup(test)
    try:
        PartitionNemesis(["one"]).invoke(test, Op(0, 0, "invoke", "nemesis", "start-partition", value="one"))
        yield test
    finally:
        test.backend.teardown(test)


@pytest.mark.docker
def test_partition_over_ssh_and_cleanup_of_leftover_rules(sshd, tmp_path):
    from jepsen_py.commands.cleanup import ssh_hosts
    from jepsen_py.commands.cleanup import ssh_spec as cleanup_spec

    with _hosts_left_partitioned(sshd, tmp_path) as test:
        rules = {n: r.exec(["iptables", "-S", "JEPSEN-PY"]).stdout.count("-j DROP")
                 for n, r in test.remotes.items()}
        assert rules == {"n1": 1, "n2": 1}, "a 2-node grudge: each side drops the other"
        # As if the controller had died here: cleanup reaches the hosts over SSH.
        opts = {"ssh_host": sshd["hosts"], "ssh_key": sshd["key"], "ssh_known_hosts": sshd["known"]}
        # Per host: the jump from INPUT and the one DROP rule.
        assert sorted(ssh_hosts(cleanup_spec(NODES, opts))["ssh hosts"]) == ["n1: 2 rule(s)", "n2: 2 rule(s)"]
        assert all("jepsen-py" not in r.exec(["iptables", "-S"]).stdout for r in test.remotes.values())


@pytest.mark.docker
def test_cleanup_reaches_the_hosts_ssh_host_names_without_ssh_nodes(sshd, tmp_path, capsys):
    """`jepsen-py cleanup --ssh-host ...` (the flags the run was given) removes the rules a dead
    controller left on those hosts; --ssh-nodes is only needed where --ssh-host was not."""
    from jepsen_py.cli import main

    with _hosts_left_partitioned(sshd, tmp_path) as test:
        flags = [a for h in sshd["hosts"] for a in ("--ssh-host", h)]
        # --run scopes the Docker side to a run that does not exist: the fixture's containers stay
        code = main(["cleanup", "--run", "no-such-run", *flags, "--ssh-key", sshd["key"],
                     "--ssh-known-hosts", sshd["known"]])
        out = capsys.readouterr().out
        assert code == 0, out
        assert "n1: 2 rule(s)" in out and "n2: 2 rule(s)" in out, out
        assert all("jepsen-py" not in r.exec(["iptables", "-S"]).stdout for r in test.remotes.values())


def _node_processes(sshd) -> dict[str, list[str]]:
    """Per host, the state of each live `cluster.node` process (ps STAT: "T" when stopped)."""
    out: dict[str, list[str]] = {}
    for node, remote in sshd["backend"].remotes.items():
        rows = remote.exec(["ps", "-eo", "stat=,args="]).stdout.splitlines()
        out[node] = [r.split()[0] for r in rows if "cluster.node" in r and not r.lstrip().startswith("Z")]
    return out


def _alive(remote, pid: str) -> bool:
    return remote.exec(["kill", "-0", pid], check=False).exit_code == 0


@pytest.mark.docker
def test_cleanup_over_ssh_ends_the_nodes_a_killed_driver_left_paused(sshd, tmp_path, capsys):
    """A driver SIGKILLed while a pause fault holds a node stopped leaves the nodes running on the
    hosts; `cleanup --ssh-host ...` ends them, the stopped one too, and nothing else: a process
    someone started over ssh survives. On clean hosts it then removes nothing."""
    from jepsen_py.cli import main

    flags = [a for h in sshd["hosts"] for a in ("--ssh-host", h)]
    flags += ["--ssh-key", sshd["key"], "--ssh-known-hosts", sshd["known"]]
    ours = SSHBackend(ssh_spec(sshd)).setup(None)
    bystanders = {}
    for node, remote in ours.items():  # not through start_daemon: not the framework's
        remote.exec(["sh", "-c", "setsid -f sleep 601 </dev/null >/dev/null 2>&1"])
        bystanders[node] = remote.exec(["pgrep", "-nx", "sleep"]).stdout.strip()
    driver = subprocess.Popen(
        [sys.executable, "-m", "jepsen_py.cli", "run", "--backend", "ssh", "--workload", "offsets",
         "--nemesis", "pause", "--fault-targets", "one", "--nemesis-interval", "1", "--time-limit", "120",
         "--no-progress", "--results-dir", str(tmp_path), *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not any("T" in s for s in _node_processes(sshd).values()):
            assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no node was ever paused"
            time.sleep(0.1)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        left = _node_processes(sshd)
        assert all(left.values()) and any("T" in s for s in left.values()), left

        code = main(["cleanup", "--run", "no-such-run", *flags])
        out = capsys.readouterr().out
        assert code == 0, out
        for node in NODES:
            assert f"removed process on: {node}: /opt/jepsen-py/node.pid (pid " in out, out
        assert _node_processes(sshd) == {n: [] for n in NODES}
        assert all(_alive(ours[n], pid) for n, pid in bystanders.items()), "cleanup hit a user's process"

        code = main(["cleanup", "--run", "no-such-run", *flags])
        out = capsys.readouterr().out
        assert code == 0 and out.strip().endswith("cleanup: removed 0 item(s)"), out
        assert all(_alive(ours[n], pid) for n, pid in bystanders.items())

        # A record whose pid another process holds now (another start time, another boot) is
        # dropped, and that process left alone.
        n1, pid = ours["n1"], bystanders["n1"]
        start = parse_stat(n1.exec(["cat", f"/proc/{pid}/stat"]).stdout).start
        boot = n1.exec(["cat", "/proc/sys/kernel/random/boot_id"]).stdout.strip()
        for pidfile, fields in (("/run/a.pid", (str(int(start) + 1), boot)), ("/run/b.pid", (start, "old"))):
            n1.write_file(record_path(pidfile), "\n".join([pid, *fields, pidfile]) + "\n")
        assert end_recorded_daemons(n1) == [] and _alive(n1, pid)
        assert n1.exec(["ls", DAEMONS_DIR], check=False).exit_code != 0

        # The DB's own files stay without --db; with it, the DB's teardown wipes them.
        def has_dir(r: SSHRemote) -> bool:
            return r.exec(["test", "-e", "/opt/jepsen-py"], check=False).exit_code == 0

        assert all(has_dir(r) for r in ours.values())
        code = main(["cleanup", "--run", "no-such-run", *flags, "--db", "jepsen_py.raftdb:RaftMetadataDB"])
        out = capsys.readouterr().out
        assert code == 0 and "ran jepsen_py.raftdb:RaftMetadataDB's teardown on n1, n2" in out, out
        assert not any(has_dir(r) for r in ours.values())
        assert all(_alive(ours[n], pid) for n, pid in bystanders.items())
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
        for node, remote in ours.items():
            remote.exec(["kill", "-s", "KILL", bystanders[node]], check=False)
            remote.close()


def test_proc_stat_and_daemon_records_are_read_as_written():
    """The fields cleanup trusts, read from this process's own /proc/PID/stat."""
    with open(f"/proc/{os.getpid()}/stat") as fh:
        stat = parse_stat(fh.read())
    assert stat is not None and stat.pgid == os.getpgrp() and stat.state == "R"
    rec = record_path("/opt/a b:c/x.pid")
    listing = f"{rec}:41\n{rec}:{stat.start}\n{rec}:boot-1\n{rec}:/opt/a b:c/x.pid\n{rec}.tmp:9\n"
    assert parse_records(listing) == [DaemonRecord(rec, 41, stat.start, "boot-1", "/opt/a b:c/x.pid")]
    assert record_path("/opt/a b:c/x.pid") == rec != record_path("/opt/other.pid")
    assert parse_records(f"{rec}:41\n{rec}:x\n") == [], "a torn record is no record"


def test_cleanup_refuses_a_db_without_hosts_and_a_bad_db_before_touching_anything(capsys):
    from jepsen_py.cli import main

    assert main(["cleanup", "--run", "no-such-run", "--db", "jepsen_py.raftdb:RaftMetadataDB"]) == 254
    assert "--ssh-host or --ssh-nodes" in capsys.readouterr().err
    code = main(["cleanup", "--run", "no-such-run", "--ssh-host", "n1=127.0.0.1:1", "--db", "no_such_mod:DB"])
    err = capsys.readouterr().err
    assert code == 254 and "no_such_mod" in err and len(err.strip().splitlines()) == 1, err
    host = ["--run", "no-such-run", "--ssh-host", "n1=127.0.0.1:1"]
    assert main(["cleanup", *host, "--db-option", "dir=/x"]) == 254
    assert "give --db too" in capsys.readouterr().err
    for option, said in (("size=3", "takes no 'size' (it takes: dir)"), ("dir=x", "an absolute path"),
                         ("dir", "expected KEY=VALUE")):
        code = main(["cleanup", *host, "--db", DIRDB, "--db-option", option])
        err = capsys.readouterr().err
        assert code == 254 and said in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.docker
def test_cleanup_tears_the_db_down_with_the_settings_it_was_run_with(sshd, capsys):
    """`cleanup --db ... --db-option ...`: the DB is built with the run's settings, so a teardown
    that depends on one (here the data directory) removes what the run made, and only that."""
    from jepsen_py.cli import main

    remotes = SSHBackend(ssh_spec(sshd)).setup(None)
    try:
        for r in remotes.values():
            r.exec(["mkdir", "-p", "/srv/dirdb-run/data", "/var/lib/dirdb"])
        flags = [a for h in sshd["hosts"] for a in ("--ssh-host", h)]
        flags += ["--ssh-key", sshd["key"], "--ssh-known-hosts", sshd["known"]]
        code = main(["cleanup", "--run", "no-such-run", *flags, "--db", DIRDB,
                     "--db-option", "dir=/srv/dirdb-run"])
        out = capsys.readouterr().out
        assert code == 0 and f"ran {DIRDB}'s teardown on n1, n2" in out, out
        for r in remotes.values():
            assert r.exec(["test", "-e", "/srv/dirdb-run"], check=False).exit_code != 0
            assert r.exec(["test", "-d", "/var/lib/dirdb"], check=False).exit_code == 0, "the default stays"
    finally:
        for r in remotes.values():
            r.exec(["rm", "-rf", "/srv/dirdb-run", "/var/lib/dirdb"], check=False)
            r.close()


@pytest.mark.docker
def test_daemon_records_work_through_sudo(sshd):
    """A non-root user with sudo: the record is written and read as root, and the daemon ends."""
    spec = password_spec(sshd)
    backend = SSHBackend(spec)
    r = backend.setup(None)["n2"]
    try:
        r.start_daemon(["sleep", "302"], pidfile="/run/sudo-t/s.pid", logfile="/run/sudo-t/s.log")
        pid = r.exec(["cat", "/run/sudo-t/s.pid"]).stdout.strip()
        assert end_recorded_daemons(r) == [f"/run/sudo-t/s.pid (pid {pid})"]
        assert not _alive(r, pid) and r.exec(["test", "-e", "/run/sudo-t/s.pid"], check=False).exit_code == 1
    finally:
        r.exec(["rm", "-rf", "/run/sudo-t"], check=False)
        backend.teardown(None)


@pytest.mark.docker
@pytest.mark.parametrize("as_root", [True, False], ids=["root", "sudo"])
def test_a_dead_daemons_pid_held_by_another_process_is_never_signalled(sshd, as_root):
    """A daemon that died leaves its pidfile; its pid may belong to another process next. Signals
    (the kill, pause and liveness probes of the DB and the nemeses) reach only the recorded daemon,
    and a start on that pidfile starts the daemon again rather than taking the stranger for it."""
    backend = SSHBackend(ssh_spec(sshd) if as_root else password_spec(sshd))
    r = backend.setup(None)["n1"]
    pidfile = "/run/reuse-t/s.pid"
    stranger = ""
    try:
        r.start_daemon(["sleep", "303"], pidfile=pidfile, logfile="/run/reuse-t/s.log")
        assert r.signal(pidfile, "0")
        assert r.signal(pidfile, "KILL")
        deadline = time.monotonic() + 60
        while r.signal(pidfile, "0"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the pid recycled: another process holds what the (left) pidfile names
        r.exec(["sh", "-c", "setsid -f sleep 604 </dev/null >/dev/null 2>&1"])
        stranger = r.exec(["pgrep", "-nx", "sleep"]).stdout.strip()
        r.write_file(pidfile, stranger + "\n")
        for sig in ("0", "STOP", "KILL"):
            assert not r.signal(pidfile, sig), sig
        assert _alive(r, stranger)
        stat = parse_stat(r.exec(["cat", f"/proc/{stranger}/stat"]).stdout)
        assert stat is not None and stat.state != "T"

        r.start_daemon(["sleep", "305"], pidfile=pidfile, logfile="/run/reuse-t/s.log")
        pid = r.exec(["cat", pidfile]).stdout.strip()
        assert pid != stranger and r.signal(pidfile, "0")
        assert "sleep 305" in r.exec(["cat", f"/proc/{pid}/cmdline"]).stdout.replace("\0", " ")
        assert r.signal(pidfile, "KILL") and _alive(r, stranger)
    finally:
        if stranger:
            r.exec(["kill", "-s", "KILL", stranger], check=False)
        end_recorded_daemons(r)
        r.exec(["rm", "-rf", "/run/reuse-t"], check=False)
        backend.teardown(None)
