"""The Local backend: nodes as processes on this host, each in its own network namespace.

No Docker, no SSH, the same faults for real: every node gets a network namespace joined to a
labelled bridge by a veth pair and an address of its own, so iptables inside the namespace can cut
it off from chosen peers exactly as in a container, while the controller (on the bridge's address)
always reaches it. Commands run through `ip netns exec`; daemons start under start-stop-daemon
inside the namespace; signals go straight to the pid; libfaketime works as anywhere else. Each
node's files live under its own directory (the remote's `workdir`), since all nodes share one
filesystem.

Needs root and iproute2. Everything it makes carries the label: namespaces are named
`jepsen-py-<run>-<node>`, links carry the alias `jepsen-py`, the one host rule (letting bridged
traffic through a FORWARD policy of DROP, as Docker sets it) carries the comment `jepsen-py`, and
the per-run directory holds every pidfile, so `jepsen-py cleanup` finds them all.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import secrets
import shutil
import signal as signals
import stat
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jepsen_py.backends.common import LABEL, RemoteCommandFailed, check_signal, daemon_argv, safe_name
from jepsen_py.errors import EnvironmentProblem, FrameworkFailure
from jepsen_py.protocols import ExecResult, Remote, Test, TestSpec

log = logging.getLogger(__name__)

# Marks a directory as one run's state, made by this backend: `cleanup` deletes only what has it.
RUN_MARKER = ".jepsen-py-local-run"
NS_PREFIX = "jepsen-py-"
SUBNET_POOL = ipaddress.ip_network("10.251.0.0/16")


def state_root() -> Path:
    """Where run directories go: JEPSEN_PY_LOCAL_ROOT, else the user's runtime directory
    ($XDG_RUNTIME_DIR), else /tmp/jepsen-py-local-<uid>: per user, since node code runs from it."""
    env = os.environ.get("JEPSEN_PY_LOCAL_ROOT")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return Path(xdg) / "jepsen-py-local"
    return Path(tempfile.gettempdir()) / f"jepsen-py-local-{os.geteuid()}"


def ensure_state_root(root: Path | None = None) -> Path:
    """The state root, created 0700 if absent. One that someone else owns, that others may write
    to, or that is a symlink is refused: whoever controls it controls the code the nodes run (as
    root)."""
    root = state_root() if root is None else Path(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise EnvironmentProblem(f"local backend: cannot create its state directory {root}: "
                                 f"{e.strerror or e}") from None
    st = os.lstat(root)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise EnvironmentProblem(f"local backend: {root} is not a plain directory; refusing to use it "
                                 "(set JEPSEN_PY_LOCAL_ROOT to a directory of your own)")
    if st.st_uid != os.geteuid():
        raise EnvironmentProblem(f"local backend: {root} belongs to uid {st.st_uid}, not to us "
                                 f"(uid {os.geteuid()}); refusing to run node code from it")
    if st.st_mode & 0o022:
        raise EnvironmentProblem(f"local backend: {root} is writable by others "
                                 f"(mode {stat.S_IMODE(st.st_mode):o}); refusing to run node code from it")
    return root


def _run(argv: Sequence[str], *, check: bool = True,
         timeout: float | None = 60) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise FrameworkFailure(f"{' '.join(argv)} exited {res.returncode}: {res.stderr.strip()[:300]}")
    return res


def _pid_alive(pid: int) -> bool:
    """Alive and not a zombie: a killed daemon's orphan may wait unreaped under a pid 1 that does
    not reap, and it must count as gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _read_pid(pidfile: str) -> int | None:
    try:
        return int(Path(pidfile).read_text().strip())
    except (OSError, ValueError):
        return None


class LocalRemote(Remote):
    """A node on this host: its own network namespace and its own directory."""

    def __init__(self, node: str, netns: str, workdir: str) -> None:
        self.node = node
        self.netns = netns
        self.workdir = workdir
        # Made by this run: nothing of an earlier run can be on it (DBs skip their pre-setup wipe).
        self.fresh = True

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        full = ["ip", "netns", "exec", self.netns, *argv]
        try:
            res = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                                 env={**os.environ, **(env or {})})
            out = ExecResult(res.returncode, res.stdout, res.stderr)
        except subprocess.TimeoutExpired as e:
            out = ExecResult(124, _text(e.stdout), _text(e.stderr) + f"\ntimed out after {timeout} s")
        except FileNotFoundError as e:
            out = ExecResult(127, "", str(e))
        if check and out.exit_code != 0:
            raise RemoteCommandFailed(self.node, argv, out.exit_code, out.stderr or out.stdout)
        return out

    def upload(self, local: Path, remote: str) -> None:
        local, dest = Path(local), Path(remote)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if local.is_dir():
            shutil.copytree(local, dest, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(local, dest)

    def download(self, remote: str, local: Path) -> None:
        src, local = Path(remote), Path(local)
        if not src.exists():
            raise FrameworkFailure(f"download from {self.node}: {remote} does not exist")
        local.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, local, dirs_exist_ok=True)
        else:
            shutil.copy2(src, local)

    def write_file(self, remote: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """A temporary file beside `remote`, renamed over it: a reader sees the old or the new file."""
        dest = Path(remote)
        if not dest.is_absolute():
            raise FrameworkFailure(f"write to {self.node}: {remote!r} is not an absolute path")
        dest.parent.mkdir(parents=True, exist_ok=True)
        raw = data.encode() if isinstance(data, str) else bytes(data)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            os.chmod(tmp, mode)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def start_daemon(
        self,
        argv: Sequence[str],
        *,
        pidfile: str,
        logfile: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        Path(pidfile).parent.mkdir(parents=True, exist_ok=True)
        Path(logfile).parent.mkdir(parents=True, exist_ok=True)
        pid = _read_pid(pidfile)
        if pid is not None and not _pid_alive(pid):
            Path(pidfile).unlink(missing_ok=True)  # a dead daemon's pidfile, maybe a zombie's pid
        self.exec(daemon_argv(argv, pidfile=pidfile, logfile=logfile, cwd=cwd), env=env)

    def signal(self, pidfile: str, sig: str) -> bool:
        sig = check_signal(sig)
        pid = _read_pid(pidfile)
        if pid is None or not _pid_alive(pid):
            return False
        if sig == "0":
            return True
        try:
            os.kill(pid, getattr(signals, f"SIG{sig}"))
        except ProcessLookupError:
            return False
        return True


def _text(b: Any) -> str:
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else str(b)


class LocalBackend:
    """Provisions one network namespace per node on a labelled bridge."""

    name = "local"

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec
        self.token = secrets.token_hex(3)
        self.run_id = safe_name(f"{spec.name}-{self.token}")
        self.root = state_root() / self.run_id
        self.bridge = f"jp{self.token}br"
        self.remotes: dict[str, LocalRemote] = {}
        self._addresses: dict[str, str] = {}
        self._forward_rule: list[str] | None = None

    def _require(self) -> None:
        if os.geteuid() != 0:
            raise EnvironmentProblem("the local backend needs root (network namespaces and iptables)")
        for tool in ("ip", "iptables", "start-stop-daemon"):
            if shutil.which(tool) is None:
                raise EnvironmentProblem(f"the local backend needs {tool!r} on PATH")

    def _subnet(self) -> ipaddress.IPv4Network:
        """A /24 from 10.251.0.0/16 that no route on this host uses yet."""
        routes = _run(["ip", "-4", "route", "show"]).stdout
        used = {ipaddress.ip_network(w.split()[0], strict=False) for w in routes.splitlines()
                if w and w.split()[0][0].isdigit()}
        candidates = list(SUBNET_POOL.subnets(new_prefix=24))
        start = int(self.token, 16) % len(candidates)
        for net in candidates[start:] + candidates[:start]:
            if not any(net.overlaps(u) for u in used):
                return net  # type: ignore[return-value]
        raise EnvironmentProblem("the local backend found no free /24 in 10.251.0.0/16")

    def setup(self, test: Test | None) -> dict[str, Remote]:
        self._require()
        nodes = list(self.spec.nodes)
        if len(nodes) > 250:
            raise EnvironmentProblem("the local backend supports at most 250 nodes")
        net = self._subnet()
        hosts = list(net.hosts())
        gateway = f"{hosts[0]}/{net.prefixlen}"
        self.root = ensure_state_root() / self.run_id
        self.root.mkdir(mode=0o700)
        (self.root / RUN_MARKER).write_text(f"{self.run_id}\n")
        (self.root / "run.json").write_text(f'{{"bridge": "{self.bridge}", "subnet": "{net}"}}\n')
        try:
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
            _run(["ip", "link", "set", "dev", self.bridge, "alias", LABEL])
            _run(["ip", "addr", "add", gateway, "dev", self.bridge])
            _run(["ip", "link", "set", self.bridge, "up"])
            self._forward_rule = ["FORWARD", "-i", self.bridge, "-o", self.bridge, "-m", "comment",
                                  "--comment", LABEL, "-j", "ACCEPT"]
            _run(["iptables", "-w", "5", "-I", *self._forward_rule[:1], "1", *self._forward_rule[1:]])
            for i, node in enumerate(nodes):
                ns = f"{NS_PREFIX}{self.run_id}-{safe_name(node)}"
                host_if, ns_if = f"jp{self.token}h{i}", f"jp{self.token}n{i}"
                addr = str(hosts[i + 1])
                _run(["ip", "netns", "add", ns])
                _run(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if])
                _run(["ip", "link", "set", "dev", host_if, "alias", LABEL])
                _run(["ip", "link", "set", host_if, "master", self.bridge, "up"])
                _run(["ip", "link", "set", ns_if, "netns", ns])
                _run(["ip", "-n", ns, "link", "set", ns_if, "name", "eth0"])
                _run(["ip", "-n", ns, "addr", "add", f"{addr}/{net.prefixlen}", "dev", "eth0"])
                _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
                workdir = self.root / safe_name(node)
                workdir.mkdir(parents=True, exist_ok=True)
                self.remotes[node] = LocalRemote(node, ns, str(workdir))
                self._addresses[node] = addr
        except BaseException:
            self.teardown(test)
            raise
        log.info("local: %d nodes on %s (%s): %s", len(nodes), self.bridge, net, self._addresses)
        return dict(self.remotes)

    def peer_address(self, node: str) -> str:
        try:
            return self._addresses[node]
        except KeyError:
            raise FrameworkFailure(f"local: no namespace for node {node!r} (setup not run?)") from None

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        return (self.peer_address(node), int(port))

    def teardown(self, test: Test | None) -> None:
        """Kills every process in this run's namespaces, deletes them, the bridge, the host rule
        and the run directory."""
        for ns in _namespaces(f"{NS_PREFIX}{self.run_id}-"):
            _remove_namespace(ns)
        # A deleted namespace lingers while its sockets time out, and keeps its veth pair with it:
        # delete the host ends now so nothing labelled outlives the teardown.
        for i in range(len(self.spec.nodes)):
            _run(["ip", "link", "delete", f"jp{self.token}h{i}"], check=False)
        if self._forward_rule is not None:
            _run(["iptables", "-w", "5", "-D", *self._forward_rule], check=False)
            self._forward_rule = None
        _run(["ip", "link", "delete", self.bridge], check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.remotes.clear()


def _namespaces(prefix: str = NS_PREFIX) -> list[str]:
    res = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.startswith(prefix)]


def _remove_namespace(ns: str) -> list[int]:
    """SIGKILLs every process in the namespace, then deletes it; returns the pids killed."""
    pids = [int(p) for p in _run(["ip", "netns", "pids", ns], check=False).stdout.split() if p.isdigit()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signals.SIGKILL)
    deadline = time.monotonic() + 5
    while any(_pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    _run(["ip", "netns", "delete", ns], check=False)
    return pids


def cleanup_state(root: Path | None = None) -> list[str]:
    """Deletes the run directories under the state root that carry our marker; nothing else (not
    the root, not a directory someone else put there)."""
    root = state_root() if root is None else Path(root)
    removed: list[str] = []
    if not root.is_dir() or root.is_symlink():
        return removed
    for d in sorted(root.iterdir()):
        marker = d / RUN_MARKER
        if d.is_dir() and not d.is_symlink() and marker.is_file() and not marker.is_symlink():
            shutil.rmtree(d, ignore_errors=True)
            removed.append(str(d))
    return removed


def cleanup_local() -> dict[str, list[str]]:
    """What `jepsen-py cleanup` removes for the local backend: every namespace named jepsen-py-*
    (and the processes in it), every link aliased jepsen-py, every run directory with our marker."""
    out: dict[str, list[str]] = {"processes": [], "namespaces": [], "links": [],
                                 "run directories": cleanup_state()}
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return out
    for ns in _namespaces():
        out["processes"] += [f"{pid} (in {ns})" for pid in _remove_namespace(ns)]
        out["namespaces"].append(ns)
    links = _run(["ip", "-o", "link", "show"], check=False).stdout.splitlines()
    for line in links:
        if f"alias {LABEL}" not in line:
            continue
        name = line.split(":")[1].strip().split("@")[0]
        if _run(["ip", "link", "delete", name], check=False).returncode == 0:
            out["links"].append(name)
    return out
