"""Opening a file a user names as input (a history to check): a regular file of bounded size.

A FIFO or a character device passed as a history would make a reader wait forever or read until
memory runs out (`/dev/zero` has no end and no newline), so only regular files are read, and only
up to MAX_FILE_BYTES; a line-oriented reader also stops a line at MAX_LINE_BYTES. Each refusal is
one BadInput line naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from jepsen_py.errors import BadInput

# 1 GiB: about five million of our history lines, more than a linearizability search or the
# in-memory checkers can take; past it a file is refused before it is read.
MAX_FILE_BYTES = 1 << 30
# 64 MiB: one op whose value is tens of megabytes is still read; a longer line is not an op.
MAX_LINE_BYTES = 64 << 20


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # reads "is not a regular file"


def open_input(path: Path | str, *, what: str = "history file") -> BinaryIO:
    """The file opened for binary reading, or BadInput: absent, not a regular file, too large.

    The file is opened without blocking and checked on the open descriptor, so a FIFO swapped in
    after a check cannot make the open (or the first read) wait for a writer."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise BadInput(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a {what}") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise BadInput(f"{path}: is {kind}, not a {what}")
        if st.st_size > MAX_FILE_BYTES:
            raise BadInput(f"{path}: {st.st_size} bytes, over the {size(MAX_FILE_BYTES)} a {what} "
                           "may be: split it or check a part of it")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path | str, *, what: str = "history file") -> bytes:
    """The whole file, refused as open_input refuses; a file that grew past the cap while being
    read is refused too."""
    with open_input(path, what=what) as f:
        try:
            data = f.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"{path}: over the {size(MAX_FILE_BYTES)} a {what} may be: split it or "
                       "check a part of it")
    return data


def size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
