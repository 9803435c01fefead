"""SSH hosts for tests: containers of the node image running sshd, made by the Docker backend.

The SSH backend needs hosts that exist already; here they are containers (labelled like any Docker
run, so this test's teardown, or a crashed run's cleanup, removes them), each with its own host
key, reached on a published loopback port, with a client key, a known_hosts file naming every
host, and two sudo users (one asked for a password, one not). `SSHHosts.flags()` gives the
`--ssh-host NODE=127.0.0.1:PORT --ssh-key --ssh-known-hosts` a `jepsen-py` command line takes.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from jepsen_py.backends.docker import DockerBackend
from jepsen_py.protocols import Test, TestSpec

PASSWORD = "s3cret"
SSH_PORT = 22


@dataclass(frozen=True)
class SSHHosts:
    """What a test needs to reach the hosts: `hosts` are NODE=127.0.0.1:PORT, one per node."""

    backend: Any  # the DockerBackend that made the containers (their peer addresses, teardown)
    tmp: Path
    key: str
    known: str
    nodes: tuple[str, ...]
    hosts: tuple[str, ...]

    def options(self) -> dict[str, Any]:
        """The SSH backend's TestSpec.options for these hosts (root, the key, host keys checked)."""
        return {"ssh_host": list(self.hosts), "ssh_key": self.key, "ssh_known_hosts": self.known}

    def flags(self) -> list[str]:
        """The same as `jepsen-py` flags."""
        out: list[str] = []
        for h in self.hosts:
            out += ["--ssh-host", h]
        return [*out, "--ssh-key", self.key, "--ssh-known-hosts", self.known]


def _spec(nodes: list[str], tmp: Path, image: str) -> TestSpec:
    return TestSpec(name="sshd", workload="none", nemesis=[], nodes=nodes, time_limit=1, concurrency=1,
                    rate=0, nemesis_interval=1, seed=0, backend="docker", read_mode=None, bugs=[], db="",
                    results_dir=tmp, options={"docker_image": image, "publish_ports": [SSH_PORT]})


@contextmanager
def sshd_hosts(image: str, tmp: Path, nodes: list[str]) -> Iterator[SSHHosts]:
    """One container per node running sshd; removed (only these) when the block ends."""
    key = tmp / "id_rsa"
    pk = paramiko.RSAKey.generate(2048)
    pk.write_private_key_file(str(key))
    key.with_suffix(".pub").write_text(f"{pk.get_name()} {pk.get_base64()} jepsen-py-test\n")
    spec = _spec(nodes, tmp, image)
    test = Test(spec=spec, store_dir=tmp, log=logging.getLogger("sshd"), rng=random.Random(0))
    backend = DockerBackend(spec)
    try:
        remotes = backend.setup(test)
        known = []
        for n, r in remotes.items():
            r.exec(["sh", "-c", "rm -f /etc/ssh/ssh_host_*"])
            r.exec(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "/etc/ssh/ssh_host_ed25519_key"])
            r.upload(key.with_suffix(".pub"), "/root/.ssh/authorized_keys")
            for user, rule in (("jepsen", "ALL"), ("nopw", "NOPASSWD: ALL")):
                r.exec(["useradd", "-m", "-s", "/bin/sh", user])
                r.exec(["sh", "-c", f"echo {user}:{PASSWORD} | chpasswd"])
                r.exec(["sh", "-c", f"echo '{user} ALL=(ALL) {rule}' > /etc/sudoers.d/{user}"])
            r.exec(["mkdir", "-p", "/run/sshd"])
            r.exec(["/usr/sbin/sshd"])
            host, port = backend.client_endpoint(n, SSH_PORT)
            pub = r.exec(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).stdout.split()
            known.append(f"[{host}]:{port} {pub[0]} {pub[1]}")
        (tmp / "known_hosts").write_text("\n".join(known) + "\n")
        hosts = tuple(f"{n}={':'.join(map(str, backend.client_endpoint(n, SSH_PORT)))}" for n in nodes)
        yield SSHHosts(backend=backend, tmp=tmp, key=str(key), known=str(tmp / "known_hosts"),
                       nodes=tuple(nodes), hosts=hosts)
    finally:
        backend.teardown(test)
