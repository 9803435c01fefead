"""The Docker backend (the default): one labelled bridge network and one labelled container per node.

Peers talk over the network by container address. The controller never relies on container
addresses being routable (they are not on Docker Desktop): each port the DB names is published on
127.0.0.1 with a random host port, and client_endpoint() returns that. Partitions drop packets by
peer address inside the containers, so the controller's traffic (which arrives from the network's
gateway) is never cut.

Everything goes through the docker SDK with argv lists. Containers run docker's init (tini) as
pid 1 so a SIGKILLed daemon is reaped and its pid really disappears.
"""

from __future__ import annotations

import io
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from jepsen_py.backends.common import (
    LABEL,
    RUN_LABEL,
    RemoteCommandFailed,
    check_signal,
    daemon_argv,
    safe_name,
    tar_of,
    untar_to,
)
from jepsen_py.backends.image import ROUTES, default_route, docker_client, ensure_image
from jepsen_py.errors import FrameworkFailure
from jepsen_py.protocols import ExecResult, Remote, Test, TestSpec

log = logging.getLogger(__name__)

CAPS = ["NET_ADMIN", "NET_RAW", "SYS_PTRACE"]


def add_arguments(group: Any) -> None:
    """The Docker backend's options on `jepsen-py run` (values land in TestSpec.options)."""
    group.add_argument(
        "--image-base", choices=ROUTES, default=default_route(),
        help="how the node image is built: debootstrap (Debian packages + docker import, no registry "
             "needed) or debian (FROM debian:bookworm-slim, needs a pull); default from "
             "JEPSEN_PY_IMAGE_BASE, else debootstrap",
    )
    group.add_argument(
        "--docker-image", metavar="IMAGE", default=None,
        help="run the nodes from this existing image instead of building the node image",
    )


class DockerRemote(Remote):
    """Runs things in one node's container."""

    def __init__(self, node: str, container: Any) -> None:
        self.node = node
        self.container = container
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
        cmd = list(argv)
        if timeout is not None:
            # The engine's exec has no deadline; coreutils' timeout gives it one on the node itself.
            cmd = ["timeout", "-s", "KILL", f"{max(timeout, 0.1):.3f}", *cmd]
        code, (out, err) = self.container.exec_run(cmd, environment=dict(env or {}), demux=True)
        res = ExecResult(code, (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace"))
        if code in (126, 127) and res.stdout.startswith("OCI runtime exec failed"):
            # The engine reports a missing program on stdout; make it look like a shell's 127.
            res = ExecResult(127, "", f"{cmd[0]}: command not found ({res.stdout.strip()})")
        if check and code != 0:
            raise RemoteCommandFailed(self.node, argv, code, res.stderr or res.stdout)
        return res

    def upload(self, local: Path, remote: str) -> None:
        """Copies `local` to `remote` in one engine call: the archive carries the whole path and the
        engine creates missing parents. A directory is merged into one that exists already."""
        local = Path(local)
        if not local.exists():
            raise FrameworkFailure(f"upload to {self.node}: {local} does not exist")
        dest = PurePosixPath(remote)
        if not dest.is_absolute():
            raise FrameworkFailure(f"upload to {self.node}: {remote!r} is not an absolute path")
        if not self.container.put_archive("/", tar_of(local, str(dest).lstrip("/"))):
            raise FrameworkFailure(f"upload of {local} to {self.node}:{remote} failed")

    def download(self, remote: str, local: Path) -> None:
        import docker.errors

        try:
            stream, _ = self.container.get_archive(remote)
        except docker.errors.NotFound as e:
            raise FrameworkFailure(f"download from {self.node}: {remote} does not exist") from e
        untar_to(b"".join(stream), PurePosixPath(remote).name, Path(local))

    def start_daemon(
        self,
        argv: Sequence[str],
        *,
        pidfile: str,
        logfile: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.exec(["mkdir", "-p", str(PurePosixPath(pidfile).parent), str(PurePosixPath(logfile).parent)])
        self.exec(daemon_argv(argv, pidfile=pidfile, logfile=logfile, cwd=cwd), env=env)

    def signal(self, pidfile: str, sig: str) -> bool:
        sig = check_signal(sig)
        res = self.exec(["pkill", f"--signal={sig}", "--pidfile", pidfile], check=False)
        return res.exit_code == 0

    def read_text(self, path: str) -> str | None:
        """A small file's text, or None when it is missing."""
        res = self.exec(["cat", path], check=False)
        return res.stdout if res.exit_code == 0 else None

    def write_text(self, path: str, text: str) -> None:
        """Writes a small file atomically enough for readers polling it (one put_archive)."""
        self.write_file(path, text)

    def write_file(self, remote: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """One put_archive at / carrying the whole path: the engine creates missing parents, and the
        file is replaced in one engine call."""
        import tarfile

        dest = PurePosixPath(remote)
        if not dest.is_absolute():
            raise FrameworkFailure(f"write to {self.node}: {remote!r} is not an absolute path")
        raw = data.encode() if isinstance(data, str) else bytes(data)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(str(dest).lstrip("/"))
            info.size = len(raw)
            info.mtime = int(time.time())
            info.mode = mode
            tar.addfile(info, io.BytesIO(raw))
        if not self.container.put_archive("/", buf.getvalue()):
            raise FrameworkFailure(f"writing {self.node}:{remote} failed")


class DockerBackend:
    """Provisions the test's nodes as containers on a labelled bridge network."""

    name = "docker"

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec
        opts = spec.options or {}
        self.image_base: str | None = opts.get("image_base")
        self.image: str | None = opts.get("docker_image")
        self.extra_ports: list[int] = [int(p) for p in opts.get("publish_ports", [])]
        self.run_id = safe_name(f"{spec.name}-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}")
        self.client: Any = None
        self.network: Any = None
        self.containers: dict[str, Any] = {}
        self.remotes: dict[str, DockerRemote] = {}
        self._addresses: dict[str, str] = {}
        self._published: dict[str, dict[int, int]] = {}

    @property
    def labels(self) -> dict[str, str]:
        return {LABEL: "1", RUN_LABEL: self.run_id}

    def _ports(self, test: Test | None) -> list[int]:
        ports = list(getattr(test.db, "ports", None) or []) if test is not None else []
        return sorted({int(p) for p in [*ports, *self.extra_ports]})

    def setup(self, test: Test | None) -> dict[str, Remote]:
        self.client = docker_client()
        image = self.image or ensure_image(self.image_base, client=self.client)
        nodes = list(self.spec.nodes)
        ports = self._ports(test)
        self.network = self.client.networks.create(
            f"jepsen-py-{self.run_id}", driver="bridge", labels=self.labels, check_duplicate=True,
        )
        try:
            with ThreadPoolExecutor(max_workers=min(8, max(1, len(nodes)))) as pool:
                for node, container in zip(nodes, pool.map(lambda n: self._create(n, image, ports), nodes),
                                           strict=True):
                    self.containers[node] = container
            for node, c in self.containers.items():
                c.reload()
                net = c.attrs["NetworkSettings"]["Networks"][self.network.name]
                self._addresses[node] = net["IPAddress"]
                self._published[node] = {
                    int(k.split("/")[0]): int(v[0]["HostPort"])
                    for k, v in (c.attrs["NetworkSettings"]["Ports"] or {}).items() if v
                }
                self.remotes[node] = DockerRemote(node, c)
        except BaseException:
            self.teardown(test)
            raise
        log.info("docker: %d nodes on %s: %s", len(nodes), self.network.name, self._addresses)
        return dict(self.remotes)

    def _create(self, node: str, image: str, ports: list[int]) -> Any:
        return self.client.containers.run(
            image,
            command=["sleep", "infinity"],
            name=f"jepsen-py-{self.run_id}-{safe_name(node)}",
            hostname=node,
            labels={**self.labels, "jepsen-py.node": node},
            network=self.network.name,
            init=True,
            cap_add=CAPS,
            ports={f"{p}/tcp": ("127.0.0.1", None) for p in ports},
            detach=True,
            auto_remove=False,
        )

    def peer_address(self, node: str) -> str:
        try:
            return self._addresses[node]
        except KeyError:
            raise FrameworkFailure(f"docker: no container for node {node!r} (setup not run?)") from None

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        host_port = self._published.get(node, {}).get(int(port))
        if host_port is not None:
            return ("127.0.0.1", host_port)
        return (self.peer_address(node), int(port))

    def teardown(self, test: Test | None) -> None:
        """Removes this run's containers and network (cleanup handles runs a crash left behind)."""
        if self.client is None:
            return
        remove_labelled(self.client, {RUN_LABEL: self.run_id})
        self.containers.clear()
        self.remotes.clear()
        self.network = None


def remove_labelled(client: Any, labels: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Force-removes every container, then every network, carrying LABEL (and `labels`, if given)."""
    import docker.errors

    filters = [LABEL] + [f"{k}={v}" for k, v in (labels or {}).items()]
    removed: dict[str, list[str]] = {"containers": [], "networks": []}
    containers = client.containers.list(all=True, filters={"label": filters})

    def kill(c: Any) -> str:
        try:
            c.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if "already in progress" not in str(e):
                raise
        return c.name

    with ThreadPoolExecutor(max_workers=8) as pool:
        removed["containers"] = list(pool.map(kill, containers))
    for net in client.networks.list(filters={"label": filters}):
        for _ in range(20):
            try:
                net.remove()
                removed["networks"].append(net.name)
                break
            except docker.errors.NotFound:
                break
            except docker.errors.APIError:
                time.sleep(0.25)  # endpoints of just-removed containers may linger for a moment
    return removed
