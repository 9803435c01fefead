"""Creating the files and directories of a run with our modes, whatever the umask: below the store,
so the history writer (and anything else that writes a file) needs nothing above it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

# Modes of everything written under results/: readable by anyone the umask lets read it, writable
# by the owner alone. Set explicitly, not left to the umask: under umask 000 a run's history, logs
# and pages would otherwise be world-writable, for anyone on the machine to rewrite the evidence.
# A stricter umask (077) still makes them stricter.
FILE_MODE = 0o644
DIR_MODE = 0o755


def file_mode() -> int:
    """FILE_MODE, narrowed by a stricter umask."""
    return FILE_MODE & ~_umask()


def dir_mode() -> int:
    """DIR_MODE, narrowed by a stricter umask."""
    return DIR_MODE & ~_umask()


def make_dirs(path: Path | str) -> Path:
    """mkdir -p with DIR_MODE for every directory it makes (Path.mkdir gives parents 0777 less
    the umask); an existing directory is left as it is."""
    path = Path(path)
    missing: list[Path] = []
    p = path
    while not p.is_dir():
        if p.exists() or p.is_symlink():  # a file (or a dangling link) where a directory must go
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(p))
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)  # the umask can narrow it, never widen it
        except FileExistsError:
            if not d.is_dir():
                raise
    return path


def create_file(path: Path | str, *, append: bool = False) -> int:
    """Opens `path` for writing (truncated, or appended to), creating it with FILE_MODE; returns
    the descriptor. A file that already exists keeps its mode."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)


def _umask() -> int:
    """The process's umask, read without changing it (Linux tells it in /proc); else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
