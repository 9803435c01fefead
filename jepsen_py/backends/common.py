"""What the Docker, SSH and Local backends share: the label, a command failure, archive helpers,
and the argv used to start a daemon.

Daemons start under Debian's start-stop-daemon, as Jepsen's own `start-daemon!` does: it detaches
(setsid), writes the pidfile, redirects output to the log and refuses to start a second copy, all
without a shell.
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from jepsen_py.errors import FrameworkFailure

LABEL = "jepsen-py"
# Added to every label set, comment and name the framework makes, so cleanup finds exactly its own.
RUN_LABEL = "jepsen-py.run"
SIGNALS = frozenset({"KILL", "STOP", "CONT", "TERM", "INT", "HUP", "USR1", "USR2", "0"})
_SKIP = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


class RemoteCommandFailed(FrameworkFailure):
    """A command on a node exited non-zero where the caller required success."""

    def __init__(self, node: str, argv: Sequence[str], exit_code: int, output: str) -> None:
        tail = " | ".join(output.strip().splitlines()[-3:])
        super().__init__(f"on {node}: {' '.join(argv)} exited {exit_code}: {tail}")
        self.node = node
        self.argv = list(argv)
        self.exit_code = exit_code
        self.output = output


def safe_name(text: str) -> str:
    """A string usable in container, network and namespace names."""
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.")[:48] or "run"


def check_signal(sig: str) -> str:
    sig = sig.upper().removeprefix("SIG")
    if sig not in SIGNALS:
        raise ValueError(f"unsupported signal {sig!r}")
    return sig


def tar_of(local: Path, arcname: str) -> bytes:
    """`local` (file or tree) as an in-memory tar whose top entry is `arcname`; caches are skipped."""

    def skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if any(p in _SKIP for p in parts) or info.name.endswith(".pyc"):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(local), arcname=arcname, recursive=True, filter=skip)
    return buf.getvalue()


def untar_to(data: io.BufferedIOBase | bytes, top: str, local: Path) -> None:
    """Extracts an archive whose top entry is `top` so that it lands exactly at `local`."""
    fileobj = io.BytesIO(data) if isinstance(data, bytes) else data
    local.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=local.parent, prefix=".jepsen-py-dl-") as tmp, \
            tarfile.open(fileobj=fileobj, mode="r|*") as tar:
        tar.extractall(tmp, filter="data")
        src = Path(tmp) / top
        if local.is_dir() and not src.is_dir():
            shutil.rmtree(local)
        elif local.exists() and src.is_dir():
            if local.is_dir():
                shutil.rmtree(local)
            else:
                local.unlink()
        shutil.move(str(src), str(local))


def daemon_argv(
    argv: Sequence[str], *, pidfile: str, logfile: str, cwd: str | None,
) -> list[str]:
    """start-stop-daemon argv that starts `argv` detached, pid in `pidfile`, output to `logfile`.

    The program goes through /usr/bin/env so a bare name is looked up on PATH; env execs in place,
    so the pid written is the program's own.
    """
    out = ["start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", pidfile,
           "--output", logfile, "--startas", "/usr/bin/env"]
    if cwd:
        out += ["--chdir", cwd]
    return [*out, "--", *argv]


def env_argv(env: Mapping[str, str] | None) -> list[str]:
    """`env K=V ...` prefix, for remotes whose exec cannot pass an environment itself."""
    if not env:
        return []
    return ["env", *(f"{k}={v}" for k, v in env.items())]
