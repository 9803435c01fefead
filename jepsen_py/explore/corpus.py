"""A corpus directory (`explore --corpus DIR`): the configurations that reached new coverage, kept
across searches, so a nightly search starts where the last one stopped, as coverage-guided fuzzers
keep their queue.

One JSON file per entry: the configuration and the features it reached. A file is named by a hash
of its configuration, so two searches writing the same entry write the same file, and each file is
written whole (a temporary file, then a rename), so a reader never sees half of one. A damaged or
foreign file (not JSON, not UTF-8, torn, nested past any entry's depth, NaN, wrong types, larger than
an entry is, a FIFO) is skipped with one line saying why; it never stops the search.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.explore.search import Search
from jepsen_py.explore.space import Config, Space
from jepsen_py.store import make_dirs, read_json, write_text_atomic

FORMAT = "jepsen-py-explore-corpus"
VERSION = 1
# a corpus file is a few kilobytes; anything far larger is not one of ours
MAX_FILE_BYTES = 4 << 20
# A search's configurations have at most 3600 fault ops (a main phase of at most 3600 s, intervals
# of a second and more); an entry asking for far more would spend minutes building its op list.
MAX_FAULT_OPS = 10_000
# an entry is an object holding the config (lists of names, the db_options pairs): three levels deep;
# past this a file is not one of ours, and the parser's stack is not spent finding that out
MAX_DEPTH = 8


@dataclass(frozen=True)
class Entry:
    """A configuration that reached new coverage, and the features it reached."""

    config: Config
    features: frozenset[str]

    def file_name(self) -> str:
        digest = hashlib.sha256(json.dumps(config_json(self.config), sort_keys=True).encode()).hexdigest()
        return f"{digest[:20]}.json"


@dataclass
class Loaded:
    """What a corpus directory gave: the entries this search's space can use, and what it skipped."""

    entries: list[Entry]
    warnings: list[str]
    outside_space: int = 0


def config_json(cfg: Config) -> dict[str, Any]:
    return asdict(cfg)


def config_from_json(data: Any) -> Config:
    """A Config from its JSON form; ValueError naming the first field that is wrong."""
    if not isinstance(data, dict):
        raise ValueError("config is not an object")
    known = {f.name for f in fields(Config)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"config has unknown field {unknown[0]!r}")

    def text(name: str) -> str:
        v = data.get(name)
        if not isinstance(v, str) or not v:
            raise ValueError(f"config.{name} is not a non-empty string")
        return v

    def texts(name: str) -> tuple[str, ...]:
        v = data.get(name)
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise ValueError(f"config.{name} is not a list of strings")
        return tuple(v)

    def num(name: str, lo: float, hi: float) -> float:
        v = data.get(name)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not lo <= v <= hi:
            raise ValueError(f"config.{name} is not a number in [{lo:g}, {hi:g}]")
        return float(v)

    def whole(name: str, lo: int, hi: int) -> int:
        v = data.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"config.{name} is not an integer in [{lo}, {hi}]")
        return v

    def pairs(name: str) -> tuple[tuple[str, str], ...]:
        v = data.get(name, [])
        if not isinstance(v, list) or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) and x for x in p) for p in v):
            raise ValueError(f"config.{name} is not a list of [KEY, VALUE] string pairs")
        return tuple((k, x) for k, x in v)

    def scalars(name: str) -> tuple[tuple[str, object], ...]:
        v = data.get(name, [])
        if not isinstance(v, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and p[0]
                and (isinstance(p[1], str) or (isinstance(p[1], int | float) and not isinstance(p[1], bool)
                                               and math.isfinite(p[1]))) for p in v):
            raise ValueError(f"config.{name} is not a list of [KEY, VALUE] pairs (a word or a number each)")
        return tuple((k, x) for k, x in v)

    rate = data.get("rate")
    # None: the DB declares no read modes (the search draws None then)
    read_mode = None if data.get("read_mode", "") is None else text("read_mode")
    interval, time_limit = num("interval", 0.001, 3600), num("time_limit", 0.001, 3600)
    if time_limit / interval > MAX_FAULT_OPS:  # the op list is built before the trial's budget runs
        raise ValueError(f"config.interval {interval:g} s in a {time_limit:g} s main phase: more than "
                         f"{MAX_FAULT_OPS:,} fault ops")
    return Config(
        workload=text("workload"), families=texts("families"), shapes=texts("shapes"),
        targets=texts("targets"), interval=interval, mode=text("mode"),
        read_mode=read_mode, node_count=whole("node_count", 1, 9),
        time_limit=time_limit, seed=whole("seed", 0, 2**63 - 1),
        clients_per_node=whole("clients_per_node", 1, 64) if "clients_per_node" in data else 2,
        rate=None if rate is None else num("rate", 0.001, 1e6), db_options=pairs("db_options"),
        backend_options=scalars("backend_options"),
    )


def in_space(cfg: Config, space: Space) -> bool:
    """Whether this search may run `cfg`: its workload, faults, read mode and cluster size are among
    those the command line allows (a corpus built on a wider space may hold others)."""
    return (cfg.workload in space.workloads and set(cfg.families) <= set(space.families)
            and cfg.read_mode in space.read_modes and cfg.node_count in space.node_counts
            and set(cfg.shapes) <= set(space.shapes) and set(cfg.targets) <= set(space.targets)
            and cfg.mode in space.modes
            and all(v in dict(space.db_option_values).get(k, ()) for k, v in cfg.db_options)
            and all(v in dict(space.backend_option_values).get(k, ()) for k, v in cfg.backend_options))


def entry_json(entry: Entry, **meta: Any) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "config": config_json(entry.config),
            "features": sorted(entry.features), **meta}


def entry_from_json(data: Any) -> Entry:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a corpus entry (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise ValueError(f"corpus entry version {data.get('version')!r}, this build reads {VERSION}")
    feats = data.get("features")
    if not isinstance(feats, list) or not all(isinstance(f, str) for f in feats):
        raise ValueError("features is not a list of strings")
    return Entry(config_from_json(data.get("config")), frozenset(feats))


def open_dir(path: Path) -> Path:
    """The corpus directory, created if it does not exist yet; BadInput when it cannot be one."""
    if path.exists() and not path.is_dir():
        raise BadInput(f"--corpus {path}: not a directory")
    try:
        make_dirs(path)
    except OSError as e:
        raise BadInput(f"--corpus {path}: cannot create it: {e.strerror or e}") from None
    return path


def load(path: Path, space: Space) -> Loaded:
    """Every entry of the directory this search's space can use, in file-name order (the same order
    on every machine); a damaged file is a warning, never an error."""
    out = Loaded([], [])
    for f in sorted(path.glob("*.json")):
        try:
            entry = entry_from_json(read_entry(f))
        except ValueError as e:
            reason = " ".join(str(e).split())
            out.warnings.append(f"skipped {f}: {reason[:200]}")
            continue
        if not in_space(entry.config, space):
            out.outside_space += 1
            continue
        out.entries.append(entry)
    return out


def read_entry(f: Path) -> Any:
    """The parsed JSON of one corpus file; ValueError saying why it is not one (the caller skips it).

    Read as store.read_json reads any side file (a FIFO or a device in the directory is refused,
    never read), only up to MAX_FILE_BYTES; a value nested past MAX_DEPTH, bare NaN or Infinity,
    and text that is not UTF-8 are refused too, so no file in the directory can stop the search."""
    if not f.is_file():  # a directory, a FIFO, a device: checked again on the open descriptor below
        raise ValueError("not a regular file")
    try:
        return read_json(f, what="corpus entry", max_bytes=MAX_FILE_BYTES, max_depth=MAX_DEPTH,
                         finite=True)
    except BadInput as e:  # the words without the path the caller adds
        raise ValueError(str(e).removeprefix(f"{f}: ").removeprefix(f"{f}:")) from None


def save(path: Path, entries: Iterable[Entry], **meta: Any) -> int:
    """Writes each entry not in the directory yet; returns how many it wrote."""
    n = 0
    for entry in entries:
        target = path / entry.file_name()
        if target.exists():
            continue
        write_text_atomic(target, json.dumps(entry_json(entry, **meta), indent=1) + "\n")
        n += 1
    return n


class Keeper:
    """Writes the search's corpus entries that came after those loaded, as they come (a search
    stopped halfway keeps what it found so far)."""

    def __init__(self, path: Path, corpus: list[tuple[Config, frozenset[str]]],
                 meta: dict[str, Any] | None = None, *, start: int | None = None) -> None:
        """`start`: the first entry of `corpus` that is new (default: every one there now was loaded)."""
        self.path = path
        self.corpus = corpus
        self.meta = dict(meta or {})
        self.loaded = len(corpus) if start is None else start
        self.done = self.loaded
        self.written = 0

    def flush(self) -> int:
        new = self.corpus[self.done:]
        self.done = len(self.corpus)
        n = save(self.path, (Entry(cfg, feats) for cfg, feats in new), **self.meta)
        self.written += n
        return n


def resume(path: Path, search: Search, space: Space, **meta: Any) -> tuple[Keeper, Loaded]:
    """Starts `search` from the directory's entries its space can use (`explore --corpus DIR`), and
    the Keeper that writes what it keeps from now on there too, with `meta` in each file; what was
    loaded and skipped is the caller's to tell."""
    loaded = load(path, space)
    search.load((e.config, e.features) for e in loaded.entries)
    return Keeper(path, search.corpus, meta=meta), loaded
