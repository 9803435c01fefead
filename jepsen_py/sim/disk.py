"""The simulated disk: one per node, in memory, with what a crash keeps and loses.

Files are inodes holding their current bytes and what of them is durable; directories map names to
inodes twice, as the process sees them now and as a crash would leave them. The rules are the
pessimistic ones the node's Disk interface promises to cope with:
- appended or overwritten bytes are durable only after a sync of that file (AppendFile.sync, or
  write_file/truncate with sync=True); a crash keeps the durable content, and, with probability
  `torn_p`, a random prefix of the unsynced tail of an appended file (a torn write);
- creating, renaming and removing names is durable only after sync_dir of the directory; a crash
  undoes the rest (a renamed file is back under its old name, a removed one is back);
- directories themselves (makedirs) are durable at once.
Every sync costs the process a draw of `fsync_s` (lognormal) in virtual time, through `charge`.
Node logs (open_log) are not part of the data: their lines are kept whole across crashes, as a line
flushed to the page cache survives a process kill.
"""

from __future__ import annotations

import errno
import math
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DiskProfile:
    """Latency of one sync (lognormal: median, shape) and the chance a crash tears an unsynced tail."""

    fsync_median_s: float = 0.001
    fsync_sigma: float = 0.5
    torn_p: float = 0.5

    def draw(self, rng: Any) -> float:
        return float(self.fsync_median_s * math.exp(self.fsync_sigma * rng.gauss(0.0, 1.0)))


class Inode:
    """A file's bytes. Durable content is `data[:durable_len]` while `durable` is None (only appends
    since the last sync), else the bytes in `durable` (an overwrite or a shrink since)."""

    __slots__ = ("data", "durable", "durable_len")

    def __init__(self) -> None:
        self.data = bytearray()
        self.durable: bytes | None = None
        self.durable_len = 0

    def sync(self) -> None:
        self.durable = None
        self.durable_len = len(self.data)

    def overwrite(self, data: bytes) -> None:
        if self.durable is None:
            self.durable = bytes(self.data[: self.durable_len])
        self.data = bytearray(data)

    def shrink(self, size: int) -> None:
        if self.durable is None and size >= self.durable_len:
            del self.data[size:]
            return
        if self.durable is None:
            self.durable = bytes(self.data[: self.durable_len])
        del self.data[size:]

    def crash(self, rng: Any, torn_p: float) -> None:
        """Keeps what is durable; maybe a torn prefix of an unsynced appended tail."""
        if self.durable is not None:
            self.data = bytearray(self.durable)
            self.durable = None
            self.durable_len = len(self.data)
            return
        tail = len(self.data) - self.durable_len
        keep = 0
        if tail > 0 and torn_p > 0 and rng.random() < torn_p:
            keep = rng.randrange(tail + 1)
        del self.data[self.durable_len + keep:]
        self.durable_len = len(self.data)


class SimAppendFile:
    """cluster.io.AppendFile on an inode (like an fd: it follows the inode across renames)."""

    def __init__(self, disk: SimDisk, inode: Inode) -> None:
        self._disk = disk
        self._inode: Inode | None = inode
        self._epoch = disk.epoch

    def _live(self) -> Inode:
        if self._inode is None or self._epoch != self._disk.epoch:
            raise OSError(errno.EBADF, "Bad file descriptor")
        return self._inode

    def write(self, data: bytes) -> None:
        ino = self._live()
        self._disk._check_io()
        ino.data += data
        self._disk.bytes_written += len(data)

    def sync(self) -> None:
        ino = self._live()
        self._disk._check_io()
        ino.sync()
        self._disk._charge_sync()

    def close(self) -> None:
        self._inode = None


class SimDisk:
    """cluster.io.Disk of one simulated node."""

    def __init__(self, rng: Any, profile: DiskProfile | None = None,
                 charge: Callable[[float], None] | None = None) -> None:
        self.rng = rng
        self.profile = profile or DiskProfile()
        #: called with each sync's latency: the cluster charges it to the node's current loop
        self.charge = charge
        self._dirs: set[str] = {"/"}
        self._names: dict[str, Inode] = {}  # path -> inode, as the process sees it
        self._durable_names: dict[str, Inode] = {}  # path -> inode, as a crash leaves it
        self._locks: set[str] = set()
        self._logs: dict[str, list[str]] = {}
        #: bumped by every crash: file handles of the dead process stop working
        self.epoch = 0
        #: a disk fault: every write and sync fails with EIO while set
        self.io_error = False
        self.syncs = 0
        self.bytes_written = 0
        self.crashes = 0

    # ---- paths --------------------------------------------------------------------------------------

    @staticmethod
    def _norm(path: str) -> str:
        return posixpath.normpath(posixpath.join("/", path))

    def _parent_exists(self, p: str) -> None:
        parent = posixpath.dirname(p)
        if parent not in self._dirs:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", parent)

    def _inode(self, path: str) -> Inode:
        p = self._norm(path)
        ino = self._names.get(p)
        if ino is None:
            if p in self._dirs:
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        return ino

    def _check_io(self) -> None:
        if self.io_error:
            raise OSError(errno.EIO, "Input/output error (simulated disk fault)")

    def _charge_sync(self) -> None:
        self.syncs += 1
        if self.charge is not None:
            self.charge(self.profile.draw(self.rng))

    # ---- cluster.io.Disk ----------------------------------------------------------------------------

    def makedirs(self, path: str) -> None:
        p = self._norm(path)
        if p in self._names:
            raise FileExistsError(errno.EEXIST, "File exists", path)
        while p not in self._dirs:
            self._dirs.add(p)
            p = posixpath.dirname(p)

    def exists(self, path: str) -> bool:
        p = self._norm(path)
        return p in self._names or p in self._dirs

    def listdir(self, path: str) -> list[str]:
        p = self._norm(path)
        if p not in self._dirs:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        prefix = p.rstrip("/") + "/"
        names = {n[len(prefix):] for n in self._names if n.startswith(prefix) and "/" not in n[len(prefix):]}
        names.update(d[len(prefix):] for d in self._dirs
                     if d.startswith(prefix) and d != p and "/" not in d[len(prefix):])
        return sorted(names)

    def read_bytes(self, path: str) -> bytes:
        return bytes(self._inode(path).data)

    def write_file(self, path: str, data: bytes, sync: bool) -> None:
        p = self._norm(path)
        self._parent_exists(p)
        if p in self._dirs:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        self._check_io()
        ino = self._names.get(p)
        if ino is None:
            ino = self._names[p] = Inode()
            ino.data = bytearray(data)
        else:
            ino.overwrite(data)
        self.bytes_written += len(data)
        if sync:
            ino.sync()
            self._charge_sync()

    def open_append(self, path: str) -> SimAppendFile:
        p = self._norm(path)
        self._parent_exists(p)
        ino = self._names.get(p)
        if ino is None:
            if p in self._dirs:
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            ino = self._names[p] = Inode()
        return SimAppendFile(self, ino)

    def truncate(self, path: str, size: int, sync: bool) -> None:
        ino = self._inode(path)
        if size < len(ino.data):
            ino.shrink(size)
        elif size > len(ino.data):
            ino.overwrite(bytes(ino.data) + bytes(size - len(ino.data)))
        if sync:
            ino.sync()
            self._charge_sync()

    def rename(self, src: str, dst: str) -> None:
        s, d = self._norm(src), self._norm(dst)
        ino = self._inode(src)
        self._parent_exists(d)
        if d in self._dirs:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", dst)
        del self._names[s]
        self._names[d] = ino

    def remove(self, path: str) -> None:
        p = self._norm(path)
        self._inode(path)
        del self._names[p]

    def sync_dir(self, path: str) -> None:
        """Makes the directory's current names durable (its files' contents are their own business)."""
        p = self._norm(path)
        if p not in self._dirs:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        prefix = p.rstrip("/") + "/"

        def inside(n: str) -> bool:
            return n.startswith(prefix) and "/" not in n[len(prefix):]

        for n in [n for n in self._durable_names if inside(n)]:
            del self._durable_names[n]
        for n, ino in self._names.items():
            if inside(n):
                self._durable_names[n] = ino
        self._charge_sync()

    def lock(self, path: str) -> bool:
        p = self._norm(path)
        if p in self._locks:
            return False
        if p not in self._names:
            self._parent_exists(p)
            self._names[p] = Inode()
        self._locks.add(p)
        return True

    def open_log(self, path: str) -> Callable[[str], None]:
        lines = self._logs.setdefault(self._norm(path), [])
        epoch = self.epoch

        def append(line: str) -> None:
            if epoch == self.epoch:  # a dead process writes nothing more
                lines.append(line)

        return append

    # ---- the simulator's side -----------------------------------------------------------------------

    def crash(self) -> None:
        """The node died: names and contents go back to what was durable (maybe a torn tail), locks
        are released, the dead process's file handles stop working."""
        self.crashes += 1
        self.epoch += 1
        self._locks.clear()
        names: dict[str, Inode] = {}
        seen: dict[int, Inode] = {}
        for n in sorted(self._durable_names):
            ino = self._durable_names[n]
            if id(ino) not in seen:
                seen[id(ino)] = ino
                ino.crash(self.rng, self.profile.torn_p)
            names[n] = ino
        self._names = names
        self._durable_names = dict(names)

    def release(self) -> None:
        """The process stopped cleanly: its locks go, its handles close, nothing is lost."""
        self.epoch += 1
        self._locks.clear()

    def logs(self) -> dict[str, list[str]]:
        """Every log file's lines, by path."""
        return {p: list(lines) for p, lines in self._logs.items()}

    def files(self) -> dict[str, bytes]:
        """The current content of every file, by path (for tests and post-mortems)."""
        return {p: bytes(ino.data) for p, ino in sorted(self._names.items())}
