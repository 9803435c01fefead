"""The store: one directory per run, created before anything else so nothing a run does is lost.

    results/<test-name>/<YYYYMMDDTHHMMSS.fff>/  test.json history.jsonl results.json jepsen.log
                                               nodes/<node>/...
    results/latest -> newest run    results/<test-name>/latest -> newest run of that test

JSON files are written atomically (temp file + rename): a reader never sees half a results.json.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jepsen_py import spec as specmod
from jepsen_py.errors import BadInput, EnvironmentProblem
from jepsen_py.files import DIR_MODE, create_file, dir_mode, file_mode, make_dirs
from jepsen_py.history import depth_ok
from jepsen_py.inputfile import open_input, read_bounded
from jepsen_py.numbers import finite_json
from jepsen_py.protocols import TestSpec

TEST_JSON = "test.json"
HISTORY = "history.jsonl"
RESULTS = "results.json"
LOG = "jepsen.log"
NODES = "nodes"
LATEST = "latest"


def write_text(path: Path | str, text: str) -> None:
    """A plain (not atomic) write of a file of the run, created with FILE_MODE."""
    with os.fdopen(create_file(path), "w", encoding="utf-8") as f:
        f.write(text)


def settle_modes(root: Path | str) -> None:
    """Gives a tree others wrote (a downloaded archive, a copied directory, a library's output)
    the modes of our own files: FILE_MODE and DIR_MODE, narrowed by a stricter umask. Symlinks are
    left alone (their mode means nothing, and their target may be outside)."""
    root = Path(root)
    fmode, dmode = file_mode(), dir_mode()
    if root.is_symlink() or not root.exists():
        return
    if root.is_file():
        os.chmod(root, fmode)
        return
    for base, dirs, files in os.walk(root):
        with contextlib.suppress(OSError):
            os.chmod(base, dmode)
        for name in files:
            f = os.path.join(base, name)
            if not os.path.islink(f):
                with contextlib.suppress(OSError):
                    os.chmod(f, fmode)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d))]


def timestamp(now: float | None = None) -> str:
    """YYYYMMDDTHHMMSS.fff in UTC: sorts as text, one per millisecond."""
    t = time.time() if now is None else now
    ms = min(int((t - int(t)) * 1000), 999)
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(int(t))) + f".{ms:03d}"


def create_run_dir(results_dir: Path, test_name: str, *, now: float | None = None) -> Path:
    """Makes results/<test-name>/<timestamp>/ (a fresh name even for runs in the same ms)."""
    test_dir = Path(results_dir) / test_name
    try:
        make_dirs(test_dir)
        base = timestamp(now)
        for i in range(1000):
            run_dir = test_dir / (base if i == 0 else f"{base}-{i}")
            try:
                run_dir.mkdir(DIR_MODE)
                return run_dir
            except FileExistsError:
                continue
    except PermissionError:
        raise EnvironmentProblem(f"results directory {results_dir} is not writable") from None
    except NotADirectoryError:
        raise EnvironmentProblem(f"results directory {results_dir} is not a directory") from None
    except OSError as e:
        raise EnvironmentProblem(f"cannot create a run directory under {results_dir}: {e.strerror}") from None
    raise EnvironmentProblem(f"cannot find a free run directory name under {test_dir}")


# Temp files of atomic writes are named .<name>.<random>.tmp: a reader never opens one, and the
# next run removes those an interrupted write left (remove_stale_temps).
TMP_SUFFIX = ".tmp"


def write_json(path: Path, obj: Any) -> None:
    """Atomic: a temp file in the same directory, fsync'd, then renamed over `path`. Readable like
    every other file of a run (FILE_MODE), not mkstemp's owner-only 0600.
    Non-finite floats (NaN, infinities) are written as strings: bare NaN is not JSON, and a strict
    reader would reject the whole file."""
    text = json.dumps(finite_json(obj), indent=2, sort_keys=False, default=_default, allow_nan=False)
    write_text_atomic(path, text + "\n")


def write_text_atomic(path: Path | str, text: str, *, fsync: bool = True) -> None:
    """Writes `text` to `path` through a temp file and a rename, then fsyncs the directory so the
    rename itself survives a crash: a reader sees the old file or the whole new one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        fsync_dir(path.parent)


def fsync_dir(directory: Path | str) -> None:
    """Makes a rename or a new file in `directory` durable (best effort where a directory cannot
    be opened, e.g. some network filesystems)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


# A temp file younger than this may be another process's write in progress (two runs can share a
# results directory): only older ones are an interrupted write's leftovers.
STALE_TEMP_S = 120.0


def remove_stale_temps(directory: Path | str, *, older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Removes the temp files interrupted atomic writes left in `directory`, its test directories
    and their runs (up to two levels down); returns them."""
    removed: list[Path] = []
    d = Path(directory)
    if not d.is_dir():
        return removed
    now = time.time()
    for pattern in (f".*{TMP_SUFFIX}", f"*/.*{TMP_SUFFIX}", f"*/*/.*{TMP_SUFFIX}"):
        for p in d.glob(pattern):
            if _is_our_temp(p) and now - p.lstat().st_mtime >= older_than_s:
                with contextlib.suppress(OSError):
                    p.unlink()
                    removed.append(p)
    return removed


def _is_our_temp(p: Path) -> bool:
    """.<name>.<mkstemp's 8 random characters>.tmp, a plain file."""
    parts = p.name[1:-len(TMP_SUFFIX)].rsplit(".", 1)
    return (p.name.startswith(".") and len(parts) == 2 and len(parts[1]) == 8 and bool(parts[0])
            and p.is_file() and not p.is_symlink())



def _default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    return repr(o)


# Pseudo-filesystems: a process's environment (/proc/self/environ holds the controller's, an SSH
# password among it), the kernel's state, devices. No node's log lives there.
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


def foreign_log_path(path: str, *, workdir: str | None, on_controller: bool) -> str | None:
    """Why a DB's log_files() path names no file of the node, or None when it may be copied into the
    run. Everywhere: a relative path, and any path under a pseudo-filesystem. On the controller's
    own filesystem (the none backend, and the local one, whose nodes are directories here): also a
    path whose real location (symlinks followed) is under one, or outside the node's own
    directory when it has one, or that is neither a file nor a directory (a FIFO would block the
    copy)."""
    if not os.path.isabs(path):
        return "is not an absolute path"
    lexical = os.path.normpath(path)
    if _under(lexical, PSEUDO_ROOTS):
        return "is under a pseudo-filesystem (a process's environment, a device)"
    if not on_controller:
        return None
    real = os.path.realpath(path)
    if _under(real, PSEUDO_ROOTS):
        return f"leads to {real}, under a pseudo-filesystem"
    if workdir is not None and not _under(real, (os.path.realpath(workdir),)):
        return f"is outside the node's directory {workdir}"
    if os.path.exists(real) and not (os.path.isfile(real) or os.path.isdir(real)):
        return "is neither a file nor a directory"
    return None


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def read_json(path: Path | str, *, what: str = "file", max_bytes: int | None = None,
              max_depth: int | None = None, finite: bool = False) -> Any:
    """A JSON file whole (test.json, results.json, a schedule, a corpus entry): a regular file only
    (a FIFO in its place would make the reader wait forever), at most `max_bytes` (the input
    bound by default), UTF-8, nested at most `max_depth` (when given), without bare NaN or
    Infinity (when `finite`); anything else is one BadInput line, "PATH: reason"."""
    try:
        if max_bytes is None:
            raw = read_bounded(path, what=what)
        else:
            with open_input(path, what=what) as fh:
                raw = fh.read(max_bytes + 1)
            if len(raw) > max_bytes:
                raise BadInput(f"{path}: larger than {max_bytes >> 20} MiB, which no {what} is")
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant if finite else None)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: cannot read: not UTF-8 text (byte {e.start + 1})") from None
    except RecursionError:
        data = None
        max_depth = max_depth or 0
    except ValueError as e:  # bare NaN or Infinity, or an integer past Python's digit limit
        raise BadInput(f"{path}: not usable JSON ({str(e).split(';')[0][:80]})") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None
    if max_depth is not None and (data is None or not depth_ok(data, max_depth)):
        noun = what.removesuffix(" file")
        raise BadInput(f"{path}: nested deeper than a {noun} is (at most {max_depth} levels)"
                       if max_depth else f"{path}: nested too deep")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def write_test_json(run_dir: Path, spec: TestSpec, extra: dict[str, Any] | None = None) -> None:
    d = specmod.to_json(spec)
    if extra:
        d.update(extra)
    write_json(run_dir / TEST_JSON, d)


def load_spec(run_dir: Path) -> TestSpec:
    path = Path(run_dir) / TEST_JSON
    return specmod.from_json(read_json(path), where=str(path))


def update_latest(run_dir: Path) -> None:
    """Points results/<test>/latest and results/latest at run_dir (relative symlinks, replaced
    atomically). Best effort: a filesystem without symlinks does not fail the run."""
    run_dir = Path(run_dir)
    test_dir = run_dir.parent
    results_dir = test_dir.parent
    for link, target in ((test_dir / LATEST, Path(run_dir.name)),
                         (results_dir / LATEST, Path(test_dir.name) / run_dir.name)):
        tmp = link.with_name(f".{LATEST}.{os.getpid()}.tmp")
        try:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(target, target_is_directory=True)
            os.replace(tmp, link)
        except OSError as e:
            logging.getLogger(__name__).warning("could not update %s: %s", link, e)


def resolve_run_dir(path: Path | str) -> Path:
    """A run directory given as itself, a `latest` link, or a test directory (its latest run)."""
    p = Path(path)
    if not p.exists():
        raise BadInput(f"{p}: no such run directory")
    if not p.is_dir():
        raise BadInput(f"{p}: not a directory")
    if (p / TEST_JSON).exists():
        return p.resolve()
    if (p / LATEST / TEST_JSON).exists():
        return (p / LATEST).resolve()
    raise BadInput(f"{p}: not a run directory (no {TEST_JSON})")


# Chatty libraries whose DEBUG lines would drown the run's own log.
_QUIET = ("urllib3", "docker", "paramiko", "asyncio", "py4j", "matplotlib", "PIL")


@contextlib.contextmanager
def capture_log(path: Path, *, level: int = logging.DEBUG) -> Iterator[logging.Handler]:
    """Copies every log record (the framework's and the plugged-in parts') into `path` for the
    duration, without making the console any chattier than it was."""
    root = logging.getLogger()
    os.close(create_file(path, append=True))  # made with FILE_MODE; the handler appends to it
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s.%(msecs)03d %(levelname)-7s %(threadName)s %(name)s: %(message)s",
        "%Y-%m-%d %H:%M:%S"))
    old_level = root.level
    old_handler_levels = {h: h.level for h in root.handlers}
    quiet_old = {n: logging.getLogger(n).level for n in _QUIET}
    for h in root.handlers:
        if h.level == logging.NOTSET:
            h.setLevel(old_level if old_level != logging.NOTSET else logging.WARNING)
    for n in _QUIET:
        if logging.getLogger(n).level == logging.NOTSET:
            logging.getLogger(n).setLevel(logging.INFO)
    root.addHandler(handler)
    root.setLevel(min(level, old_level) if old_level != logging.NOTSET else level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(old_level)
        for h, lvl in old_handler_levels.items():
            h.setLevel(lvl)
        for n, lvl in quiet_old.items():
            logging.getLogger(n).setLevel(lvl)
