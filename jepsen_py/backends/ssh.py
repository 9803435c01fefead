"""The SSH backend (paramiko): Jepsen's classic mode, for real hosts and VMs that already exist.

Nodes are host names (or `--ssh-host NODE=HOST[:PORT]` maps a node to where SSH reaches it). Host
keys are checked against known_hosts by default, as ssh does; `--no-strict-host-key-checking`
accepts any key (Jepsen's --strict-host-key-checking off). Commands run as argv: SSH only carries a
string, so every argument is quoted with shlex before it leaves, and no input is ever interpreted by
the remote shell. With a non-root user, `--ssh-sudo` (on by default for non-root users) runs every
command through `sudo -n`. Files move by SFTP as one tar each way. A connection that breaks is
re-opened and the command retried, but only when it never started on the node.

Every daemon started on a host is recorded there under DAEMONS_DIR (its pid, its start time and the
boot it ran in), so `jepsen-py cleanup` can end exactly the processes the framework started after a
controller died, and never a process that reused a pid since.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import posixpath
import secrets
import shlex
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.backends.common import RemoteCommandFailed, check_signal, daemon_argv, tar_of, untar_to
from jepsen_py.errors import BadInput, EnvironmentProblem, FrameworkFailure
from jepsen_py.flags import path_text
from jepsen_py.nodenames import check_node_name
from jepsen_py.numbers import integer
from jepsen_py.protocols import ExecResult, Remote, Test, TestSpec

log = logging.getLogger(__name__)

CONNECT_RETRIES = 5

# The framework's own directory on a host: one record per pidfile it had start-stop-daemon write.
DAEMONS_DIR = "/var/lib/jepsen-py/daemons"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# `stat_of PID` prints /proc/PID/stat after the name (which may hold spaces and parentheses); from
# there the state is field 1 and the start time field 20. `ours PIDFILE RECORD` prints the pid
# PIDFILE names when it is still the daemon RECORD describes (the same pid, start time and boot, not
# a zombie; without a record, the pidfile is all there is to go by) and fails otherwise: a daemon
# that died leaves its pidfile, and its pid may be another process's now.
_OURS = r"""
stat_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null; }
ours() {
  pid=$(cat -- "$1" 2>/dev/null) || return 1
  case $pid in ''|*[!0-9]*) return 1 ;; esac
  [ -e "$2" ] || { echo "$pid"; return 0; }
  { read -r rpid; read -r rstart; read -r rboot; } < "$2" || return 1
  stat=$(stat_of "$pid") || return 1
  case $stat in Z*|X*|'') return 1 ;; esac
  start=$(echo "$stat" | cut -d' ' -f20)
  boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)
  [ "$rpid" = "$pid" ] && [ -n "$start" ] && [ "$rstart" = "$start" ] && [ "$rboot" = "$boot" ] || return 1
  echo "$pid"
}
"""
# Runs start-stop-daemon (the arguments after the pidfile and the record's path) and then records
# the daemon it started: pid, start time (clock ticks since boot, /proc/PID/stat field 22), boot id,
# pidfile. A fixed script: every input arrives as a positional argument, none is interpolated. A
# daemon that is gone already, or a record that cannot be written, leaves the start's outcome as is.
# Before the start, a pidfile naming anything but the recorded daemon goes, so that start-stop-daemon
# does not take a stranger holding that pid for the daemon "already running".
_START_AND_RECORD = _OURS + r"""
pidfile=$1 record=$2
shift 2
if [ -e "$record" ] && ! ours "$pidfile" "$record" >/dev/null; then
  rm -f -- "$pidfile"
fi
"$@" || exit $?
pid=$(cat -- "$pidfile" 2>/dev/null) || exit 0
start=$(stat_of "$pid" | cut -d' ' -f20)
[ -n "$start" ] || exit 0
boot=$(cat /proc/sys/kernel/random/boot_id) || exit 0
mkdir -p -- "${record%/*}" 2>/dev/null &&
  printf '%s\n' "$pid" "$start" "$boot" "$pidfile" > "$record.tmp" 2>/dev/null &&
  mv -f -- "$record.tmp" "$record" 2>/dev/null
exit 0
"""
# Sends signal $1 (a name, or 0 to ask whether it lives) to the daemon of pidfile $2 only if it is
# the recorded one ($3): never to whoever holds a dead daemon's pid now.
_SIGNAL_OURS = _OURS + r"""
pid=$(ours "$2" "$3") || exit 1
if [ "$1" = 0 ]; then exec kill -0 "$pid"; fi
exec kill -s "$1" "$pid"
"""


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The SSH backend's options on `jepsen-py run` (values land in TestSpec.options)."""
    group.add_argument("--ssh-user", default="root", help="SSH user (default root)")
    group.add_argument("--ssh-key", type=path_text, metavar="FILE", default=None, help="private key file")
    group.add_argument("--ssh-password", default=os.environ.get("JEPSEN_PY_SSH_PASSWORD"),
                       help="password (for the login, and for sudo if it asks); default from "
                            "JEPSEN_PY_SSH_PASSWORD, which keeps it out of the process list; prefer keys")
    group.add_argument("--ssh-port", type=integer(1, 65535), default=22, help="SSH port (default 22)")
    group.add_argument("--ssh-host", action="append", default=[], metavar="NODE=HOST[:PORT]",
                       help="where SSH reaches NODE, when that is not the node's name (repeatable); without "
                            "--nodes or --node-count the nodes named here are the test's nodes (and an "
                            "explore's hosts)")
    group.add_argument("--ssh-sudo", action=argparse.BooleanOptionalAction, default=None,
                       help="run commands with sudo (default: when the user is not root)")
    group.add_argument("--strict-host-key-checking", action=argparse.BooleanOptionalAction, default=True,
                       help="check host keys against known_hosts (default on; --no-strict-host-key-checking "
                            "accepts any key)")
    group.add_argument("--ssh-known-hosts", type=path_text, metavar="FILE", default=None,
                       help="known_hosts file (default ~/.ssh/known_hosts)")


def parse_hosts(options: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """--ssh-host's NODE=HOST[:PORT] items as (node, where) pairs, in the order given."""
    hosts: list[tuple[str, str]] = []
    for item in options.get("ssh_host") or []:
        node, sep, where = str(item).partition("=")
        if not sep or not node or not where:
            raise BadInput(f"--ssh-host: expected NODE=HOST[:PORT], got {item!r}")
        if node in dict(hosts):
            raise BadInput(f"--ssh-host: node {node!r} given twice")
        hosts.append((node, where))
    return tuple(hosts)


def given_nodes(options: Mapping[str, Any]) -> list[str]:
    """The nodes --ssh-host names: the hosts a run without --nodes (and every search) runs on."""
    return [check_node_name(node, "--ssh-host") for node, _ in parse_hosts(options)]


def options_for(options: Mapping[str, Any], nodes: Sequence[str]) -> dict[str, Any]:
    """`options` with --ssh-host narrowed to `nodes`: a trial on 3 of 5 hosts names those 3."""
    keep = set(nodes)
    return {**options, "ssh_host": [f"{n}={w}" for n, w in parse_hosts(options) if n in keep]}


@dataclass(frozen=True, slots=True)
class SSHOptions:
    user: str = "root"
    key: str | None = None
    password: str | None = None
    port: int = 22
    hosts: tuple[tuple[str, str], ...] = ()
    sudo: bool | None = None
    strict: bool = True
    known_hosts: str | None = None
    connect_timeout: float = 10.0

    @classmethod
    def from_spec(cls, spec: TestSpec) -> SSHOptions:
        o = spec.options or {}
        return cls(user=o.get("ssh_user") or "root", key=o.get("ssh_key"), password=o.get("ssh_password"),
                   port=int(o.get("ssh_port") or 22), hosts=parse_hosts(o), sudo=o.get("ssh_sudo"),
                   strict=o.get("strict_host_key_checking", True) is not False,
                   known_hosts=o.get("ssh_known_hosts"))

    @property
    def use_sudo(self) -> bool:
        return self.user != "root" if self.sudo is None else bool(self.sudo)

    def address(self, node: str) -> tuple[str, int]:
        """host, port for `node`: HOST, HOST:PORT, [V6] or [V6]:PORT (a bare IPv6 has no port)."""
        where = dict(self.hosts).get(node, node)
        if where.startswith("["):
            host, _, rest = where[1:].partition("]")
            return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else self.port
        host, sep, port = where.rpartition(":")
        if sep and port.isdigit() and ":" not in host:
            return host, int(port)
        return where, self.port


def record_path(pidfile: str) -> str:
    """Where the record of the daemon with `pidfile` goes: one per pidfile, a restart replaces it."""
    return posixpath.join(DAEMONS_DIR, hashlib.sha256(pidfile.encode()).hexdigest()[:24] + ".daemon")


@dataclass(frozen=True, slots=True)
class DaemonRecord:
    """One daemon the framework started on a host, as start_daemon recorded it there."""

    path: str
    pid: int
    start: str
    boot: str
    pidfile: str


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of /proc/PID/stat that say whether a pid is still the process recorded."""

    state: str
    pgid: int
    start: str


def parse_records(listing: str) -> list[DaemonRecord]:
    """`grep -r -H '' DAEMONS_DIR` (PATH:LINE per line) as records; anything else is skipped."""
    lines: dict[str, list[str]] = {}
    for row in listing.splitlines():
        path, sep, line = row.partition(":")
        if sep and path.endswith(".daemon"):
            lines.setdefault(path, []).append(line)
    out = []
    for path, f in sorted(lines.items()):
        if len(f) == 4 and f[0].isdigit() and f[1].isdigit() and f[2] and posixpath.isabs(f[3]):
            out.append(DaemonRecord(path, int(f[0]), f[1], f[2], f[3]))
    return out


def parse_stat(text: str) -> ProcStat | None:
    """/proc/PID/stat's state, process group and start time (the name before ")" may hold spaces)."""
    rest = text.rpartition(")")[2].split()
    if len(rest) < 20 or not rest[2].lstrip("-").isdigit():
        return None
    return ProcStat(rest[0], int(rest[2]), rest[19])


def _recorded_process(remote: SSHRemote, rec: DaemonRecord, boot: str) -> ProcStat | None:
    """The live process `rec` names, or None when it is gone (or a zombie) or its pid now belongs
    to another process (another boot, another start time)."""
    if rec.boot != boot:
        return None
    res = remote.exec(["cat", f"/proc/{rec.pid}/stat"], check=False)
    stat = parse_stat(res.stdout) if res.exit_code == 0 else None
    if stat is None or stat.start != rec.start or stat.state in ("Z", "X"):
        return None
    return stat


def _records(remote: SSHRemote) -> tuple[list[DaemonRecord], str]:
    """The host's daemon records and its boot id ("" when there are no records)."""
    listing = remote.exec(["grep", "-r", "-H", "-s", "", DAEMONS_DIR], check=False).stdout
    records = parse_records(listing)
    if not records:
        return [], ""
    return records, remote.exec(["cat", BOOT_ID]).stdout.strip()


def _forget(remote: SSHRemote, rec: DaemonRecord) -> None:
    """Drops a record whose process is gone, and its pidfile while that still names the pid (a
    later pidfile-based kill must not hit whoever holds the pid next)."""
    held = remote.exec(["cat", rec.pidfile], check=False)
    if held.exit_code == 0 and held.stdout.strip() == str(rec.pid):
        remote.exec(["rm", "-f", rec.pidfile], check=False)
    remote.exec(["rm", "-f", rec.path, f"{rec.path}.tmp"], check=False)


def _remove_empty_dirs(remote: SSHRemote) -> None:
    """The records' directories go once empty, so a host is left as found (rmdir keeps a full one)."""
    remote.exec(["rmdir", DAEMONS_DIR, posixpath.dirname(DAEMONS_DIR)], check=False)


def end_recorded_daemons(remote: SSHRemote, *, wait: float = 10.0) -> list[str]:
    """Ends every daemon start_daemon recorded on the host that still runs, and drops the records
    (and the pidfiles still naming their pid) of all; returns "PIDFILE (pid N)" per process ended.

    SIGKILL goes to the daemon's process group (its children) and ends a SIGSTOPped process too. A pid
    that another process holds now is left alone: only the recorded boot and start time count."""
    records, boot = _records(remote)
    ended: list[str] = []
    for rec in records:
        stat = _recorded_process(remote, rec, boot)
        if stat is not None:
            group = [f"-{stat.pgid}"] if stat.pgid > 1 else []
            remote.exec(["kill", "-s", "KILL", "--", *group, str(rec.pid)], check=False)
            deadline = time.monotonic() + wait
            while _recorded_process(remote, rec, boot) is not None:
                if time.monotonic() > deadline:
                    raise FrameworkFailure(f"{remote.node}: pid {rec.pid} ({rec.pidfile}) survived "
                                           f"SIGKILL for {wait:.0f} s")
                time.sleep(0.05)
            ended.append(f"{rec.pidfile} (pid {rec.pid})")
        _forget(remote, rec)
    _remove_empty_dirs(remote)
    return ended


def forget_ended_daemons(remote: SSHRemote) -> None:
    """Drops the records of daemons no longer running (a run's teardown ended them) and keeps those
    still running (--leave-db-running), which cleanup ends later."""
    records, boot = _records(remote)
    for rec in records:
        if _recorded_process(remote, rec, boot) is None:
            _forget(remote, rec)
    _remove_empty_dirs(remote)


class SSHRemote(Remote):
    """One node over one SSH connection (re-opened when it breaks)."""

    def __init__(self, node: str, opts: SSHOptions) -> None:
        self.node = node
        self.opts = opts
        self.host, self.port = opts.address(node)
        self._client: Any = None
        self._lock = threading.Lock()
        # "-n" (sudo must not ask) or "-S" (sudo asks, and reads the password from stdin); decided
        # once per node by asking sudo whether it needs a password at all.
        self._sudo_mode: str | None = None

    # ---- connection -----------------------------------------------------------------------------

    def connect(self) -> Any:
        import paramiko

        with self._lock:
            if self._client is not None and self._client.get_transport() is not None \
                    and self._client.get_transport().is_active():
                return self._client
            client = paramiko.SSHClient()
            known = self.opts.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
            if self.opts.strict:
                client.set_missing_host_key_policy(paramiko.RejectPolicy())
                if os.path.exists(known):
                    client.load_host_keys(known)
            else:
                client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
            last: Exception | None = None
            for attempt in range(CONNECT_RETRIES):
                try:
                    client.connect(
                        self.host, port=self.port, username=self.opts.user, password=self.opts.password,
                        key_filename=self.opts.key, timeout=self.opts.connect_timeout,
                        banner_timeout=self.opts.connect_timeout, auth_timeout=self.opts.connect_timeout,
                        allow_agent=self.opts.key is None and self.opts.password is None,
                        look_for_keys=self.opts.key is None and self.opts.password is None,
                    )
                    self._client = client
                    return client
                except paramiko.BadHostKeyException as e:
                    raise EnvironmentProblem(
                        f"ssh {self.node} ({self.host}:{self.port}): host key does not match known_hosts "
                        f"({known}): {e}") from e
                except paramiko.SSHException as e:
                    if "not found in known_hosts" in str(e):
                        raise EnvironmentProblem(
                            f"ssh {self.node} ({self.host}:{self.port}): host key not in {known}; add it "
                            "(ssh-keyscan) or pass --no-strict-host-key-checking") from e
                    if isinstance(e, paramiko.AuthenticationException):
                        raise EnvironmentProblem(
                            f"ssh {self.node} ({self.host}:{self.port}): authentication failed for user "
                            f"{self.opts.user!r}") from e
                    last = e
                except (OSError, EOFError) as e:
                    last = e
                time.sleep(min(2.0, 0.2 * 2**attempt))
            raise EnvironmentProblem(f"ssh {self.node} ({self.host}:{self.port}): cannot connect: {last}")

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _drop(self) -> None:
        with self._lock:
            if self._client is not None:
                with contextlib.suppress(Exception):
                    self._client.close()
                self._client = None

    # ---- commands -------------------------------------------------------------------------------

    def sudo_mode(self) -> str:
        """"-n" when sudo needs no password here (or none was given), else "-S".

        The password goes to stdin only when sudo will read it: written to a sudo that does not ask,
        it would be the command's input instead."""
        if self._sudo_mode is None:
            if not self.opts.password:
                self._sudo_mode = "-n"
            else:
                probe = self._run_line(shlex.join(["sudo", "-n", "true"]), None, send_password=False)
                self._sudo_mode = "-n" if probe.exit_code == 0 else "-S"
        return self._sudo_mode

    def command(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
        """The one string SSH carries: every argument quoted, sudo and env as argv prefixes."""
        cmd: list[str] = []
        if self.opts.use_sudo:
            mode = self._sudo_mode or ("-S" if self.opts.password else "-n")
            if mode == "-S":
                # -k: ignore cached credentials, so sudo always asks and always reads the password
                # from stdin (-S, no prompt text) rather than leaving it for the command.
                cmd += ["sudo", "-S", "-k", "-p", ""]
            else:
                cmd += ["sudo", "-n"]
            cmd += ["--"]
        if env:
            cmd += ["env", *(f"{k}={v}" for k, v in env.items())]
        return shlex.join([*cmd, *argv])

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        full = list(argv)
        if timeout is not None:
            full = ["timeout", "-s", "KILL", f"{max(timeout, 0.1):.3f}", *full]
        send = bool(self.opts.use_sudo and self.opts.password and self.sudo_mode() == "-S")
        line = self.command(full, env)
        res = self._run_line(line, timeout, send_password=send)
        if check and res.exit_code != 0:
            raise RemoteCommandFailed(self.node, argv, res.exit_code, res.stderr or res.stdout)
        return res

    def _run_line(self, line: str, timeout: float | None, *, send_password: bool) -> ExecResult:
        """Runs one command line over a fresh channel; the password is written first when sudo
        will ask for it."""
        import paramiko

        for attempt in range(3):
            client = self.connect()
            try:
                chan = client.get_transport().open_session()
            except (paramiko.SSHException, OSError, EOFError) as e:
                # The command never reached the node: safe to reconnect and retry.
                log.info("ssh %s: channel failed (%s), reconnecting", self.node, e)
                self._drop()
                if attempt == 2:
                    raise EnvironmentProblem(f"ssh {self.node}: cannot open a session: {e}") from e
                time.sleep(0.2 * 2**attempt)
                continue
            break
        with chan:
            if timeout is not None:
                chan.settimeout(timeout + 30)
            chan.exec_command(line)
            if send_password and self.opts.password:
                chan.sendall((self.opts.password + "\n").encode())
            chan.shutdown_write()
            out, err = self._collect(chan)
            code = chan.recv_exit_status()
        return ExecResult(code, out.decode(errors="replace"), err.decode(errors="replace"))

    @staticmethod
    def _collect(chan: Any) -> tuple[bytes, bytes]:
        out, err = bytearray(), bytearray()
        while True:
            got = False
            if chan.recv_ready():
                out += chan.recv(65536)
                got = True
            if chan.recv_stderr_ready():
                err += chan.recv_stderr(65536)
                got = True
            # EOF, not the exit status, ends the output: sshd may send the status before the last data.
            if (chan.eof_received or chan.closed) and not chan.recv_ready() and not chan.recv_stderr_ready():
                break
            if not got:
                time.sleep(0.002)
        return bytes(out), bytes(err)

    # ---- files ----------------------------------------------------------------------------------

    def _tmp(self) -> str:
        return f"/tmp/jepsen-py-{secrets.token_hex(6)}.tar"

    def upload(self, local: Path, remote: str) -> None:
        local = Path(local)
        if not local.exists():
            raise FrameworkFailure(f"upload to {self.node}: {local} does not exist")
        parent, name = posixpath.split(remote.rstrip("/"))
        tmp = self._tmp()
        sftp = self.connect().open_sftp()
        try:
            with sftp.open(tmp, "wb") as fh:
                fh.set_pipelined(True)
                fh.write(tar_of(local, name))
        finally:
            sftp.close()
        try:
            self.exec(["mkdir", "-p", parent or "/"])
            self.exec(["tar", "--no-same-owner", "-xf", tmp, "-C", parent or "/"])
        finally:
            self._rm_tmp(tmp)

    def download(self, remote: str, local: Path) -> None:
        parent, name = posixpath.split(remote.rstrip("/"))
        tmp = self._tmp()
        try:
            self.exec(["tar", "-cf", tmp, "-C", parent or "/", name])
            if self.opts.use_sudo:
                self.exec(["chown", self.opts.user, tmp])
            sftp = self.connect().open_sftp()
            try:
                with sftp.open(tmp, "rb") as fh:
                    fh.prefetch()
                    data = fh.read()
            finally:
                sftp.close()
        finally:
            self._rm_tmp(tmp)
        untar_to(data, name, Path(local))

    def write_file(self, remote: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Over SFTP to a temporary file, then `install` puts it in place (as root under sudo),
        creating missing parents and setting the mode."""
        if not posixpath.isabs(remote):
            raise FrameworkFailure(f"write to {self.node}: {remote!r} is not an absolute path")
        raw = data.encode() if isinstance(data, str) else bytes(data)
        tmp = self._tmp()
        sftp = self.connect().open_sftp()
        try:
            with sftp.open(tmp, "wb") as fh:
                fh.set_pipelined(True)
                fh.write(raw)
        finally:
            sftp.close()
        try:
            self.exec(["install", "-D", "-m", f"{mode & 0o7777:o}", tmp, remote])
        finally:
            self._rm_tmp(tmp)

    def _rm_tmp(self, tmp: str) -> None:
        with contextlib.suppress(Exception):
            self.exec(["rm", "-f", tmp], check=False)

    # ---- daemons --------------------------------------------------------------------------------

    def start_daemon(
        self,
        argv: Sequence[str],
        *,
        pidfile: str,
        logfile: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.exec(["mkdir", "-p", posixpath.dirname(pidfile), posixpath.dirname(logfile)])
        start = daemon_argv(argv, pidfile=pidfile, logfile=logfile, cwd=cwd)
        res = self.exec(["sh", "-c", _START_AND_RECORD, "sh", pidfile, record_path(pidfile), *start],
                        env=env, check=False)
        if res.exit_code != 0:
            raise RemoteCommandFailed(self.node, start, res.exit_code, res.stderr or res.stdout)

    def signal(self, pidfile: str, sig: str) -> bool:
        sig = check_signal(sig)
        res = self.exec(["sh", "-c", _SIGNAL_OURS, "sh", sig, pidfile, record_path(pidfile)], check=False)
        return res.exit_code == 0


class SSHBackend:
    """Connects to hosts that exist already; provisions nothing and removes nothing."""

    name = "ssh"

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec
        self.opts = SSHOptions.from_spec(spec)
        unknown = [n for n, _ in self.opts.hosts if n not in spec.nodes]
        if unknown:
            raise BadInput(f"--ssh-host names nodes not in --nodes: {', '.join(unknown)}")
        self.remotes: dict[str, SSHRemote] = {}
        self._peers: dict[str, str] = dict((spec.options or {}).get("peer_addresses") or {})

    def setup(self, test: Test | None) -> dict[str, Remote]:
        nodes = list(self.spec.nodes)
        remotes = {n: SSHRemote(n, self.opts) for n in nodes}
        with ThreadPoolExecutor(max_workers=min(16, max(1, len(nodes)))) as pool:
            list(pool.map(lambda r: r.connect(), remotes.values()))
        self.remotes = remotes
        return dict(remotes)

    def peer_address(self, node: str) -> str:
        """The node's address as the other nodes see it: given in options["peer_addresses"], else
        the node's own answer to `hostname -I` (first address), else its resolved name."""
        if node not in self._peers:
            addr = ""
            remote = self.remotes.get(node)
            if remote is not None:
                res = remote.exec(["hostname", "-I"], check=False)
                addr = res.stdout.split()[0] if res.exit_code == 0 and res.stdout.split() else ""
            if not addr:
                try:
                    addr = socket.gethostbyname(self.opts.address(node)[0])
                except OSError as e:
                    raise EnvironmentProblem(f"cannot resolve node {node!r}: {e}") from e
            self._peers[node] = addr
        return self._peers[node]

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        return (self.peer_address(node), int(port))

    def teardown(self, test: Test | None) -> None:
        """Forgets the daemons that ended (the DB's teardown ran before), then disconnects."""
        for r in self.remotes.values():
            try:
                forget_ended_daemons(r)
            except Exception as e:  # a host gone, a broken connection: still disconnect the rest
                log.warning("ssh %s: daemon records not tidied: %s", r.node, e)
            r.close()
        self.remotes = {}
