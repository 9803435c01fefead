"""explore --corpus DIR: entries written as a search reaches new coverage, read back by the next search
into its corpus and seen-counts; a damaged file is a warning, a DIR that is a file is 254."""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jepsen_py.cli import main
from jepsen_py.errors import BadInput
from jepsen_py.explore import corpus
from jepsen_py.explore.search import Search
from jepsen_py.explore.space import Config, Space, nemesis_events
from tests.jepsen_py.explore.damage import damaged, raw_values
from tests.jepsen_py.explore.planted import PlantedSystem


def _searched(steps: int, seed: int = 4) -> Search:
    search = Search(PlantedSystem(), Space(), seed=seed)
    for _ in range(steps):
        search.step()
    return search


def test_entries_round_trip_and_name_by_their_configuration(tmp_path: Path) -> None:
    search = _searched(40)
    assert search.corpus
    keeper = corpus.Keeper(tmp_path, search.corpus, meta={"explore_seed": 4}, start=0)
    assert keeper.flush() == len(search.corpus) == len(list(tmp_path.glob("*.json")))
    assert keeper.flush() == 0, "nothing new: nothing written twice"
    loaded = corpus.load(tmp_path, Space())
    assert loaded.warnings == [] and loaded.outside_space == 0
    assert {(e.config, e.features) for e in loaded.entries} == set(search.corpus)
    one = json.loads(next(iter(sorted(tmp_path.glob("*.json")))).read_text())
    assert one["format"] == corpus.FORMAT and one["explore_seed"] == 4
    assert one["features"] == sorted(one["features"])


def test_a_loaded_corpus_is_the_next_search_start(tmp_path: Path) -> None:
    first = _searched(60)
    corpus.Keeper(tmp_path, first.corpus, start=0).flush()
    second = Search(PlantedSystem(), Space(), seed=9)
    loaded = corpus.load(tmp_path, Space())
    second.load((e.config, e.features) for e in loaded.entries)
    reached = set().union(*(f for _, f in first.corpus))
    assert len(second.corpus) == len(first.corpus) and set(second.seen) == reached
    assert second.stats.features == len(reached)
    # a trial that reaches only what the corpus reached does not join it again
    cfg, feats = first.corpus[0]
    again = PlantedSystem().trial(cfg)
    assert again.coverage == feats
    second.record(cfg, again)
    assert len(second.corpus) == len(first.corpus)
    # with no warm-up and no random share, every configuration is a loaded entry mutated (a new seed,
    # at most two dimensions changed: a node count brings its shapes along)
    second.warmup, second.random_share = 0, 0.0

    def changed(a: object, b: object) -> int:
        return sum(getattr(a, f) != getattr(b, f) for f in vars(a) if f != "seed")

    for _ in range(20):
        cfg = second.next_config()
        assert min(changed(cfg, parent) for parent, _ in second.corpus) <= 3, cfg


def test_damaged_and_foreign_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    search = _searched(30)
    corpus.Keeper(tmp_path, search.corpus, start=0).flush()
    good = len(search.corpus)
    (tmp_path / "torn.json").write_text('{"format": "jepsen-py-explore-corpus", "ver')
    (tmp_path / "other.json").write_text('{"hello": 1}')
    entry = corpus.entry_json(corpus.Entry(search.corpus[0][0], search.corpus[0][1]))
    entry["config"]["node_count"] = "three"
    (tmp_path / "badfield.json").write_text(json.dumps(entry))
    (tmp_path / "dir.json").mkdir()
    loaded = corpus.load(tmp_path, Space())
    assert len(loaded.entries) == good
    reasons = "\n".join(loaded.warnings)
    assert len(loaded.warnings) == 4
    assert "torn.json" in reasons and "other.json: not a corpus entry" in reasons
    assert "badfield.json: config.node_count is not an integer" in reasons
    assert "dir.json: not a regular file" in reasons


def test_entries_outside_the_space_are_counted_not_loaded(tmp_path: Path) -> None:
    search = _searched(40)
    corpus.Keeper(tmp_path, search.corpus, start=0).flush()
    narrow = replace(Space(), workloads=("offsets",))
    loaded = corpus.load(tmp_path, narrow)
    assert all(e.config.workload == "offsets" for e in loaded.entries)
    assert loaded.outside_space == len(search.corpus) - len(loaded.entries) > 0


def test_a_corpus_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(BadInput, match="not a directory"):
        corpus.open_dir(f)
    assert corpus.open_dir(tmp_path / "new" / "dir").is_dir()


def _explore(tmp_path: Path, *extra: str) -> int:
    try:
        return main(["explore", "--nemesis", "none", "--workload", "offsets", "--node-count", "3",
                     "--time-limit", "2", "--budget", "4", "--seed", "5", "--no-progress",
                     "--results-dir", str(tmp_path / "r"), *extra])
    except SystemExit as e:
        return int(e.code or 0)


def test_explore_corpus_second_run_starts_from_the_first(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "corpus"
    assert _explore(tmp_path, "--corpus", str(d)) == 0
    written = sorted(d.glob("*.json"))
    assert written, "the first search kept the configurations that reached new coverage"
    err = capsys.readouterr().err
    assert f"corpus {d}: 0 entries loaded" in err
    (d / "damaged.json").write_text("{not json")
    assert _explore(tmp_path, "--corpus", str(d)) == 0
    err = capsys.readouterr().err
    assert f"corpus {d}: {len(written)} entries loaded" in err
    assert f"explore: --corpus: skipped {d / 'damaged.json'}: " in err
    runs = sorted((tmp_path / "r" / "explore").iterdir())
    second = json.loads((runs[-1] / "explore.json").read_text())
    assert second["fanout"]["corpus_loaded"] == len(written) and second["coverage_features"] > 0


def test_explore_corpus_that_is_a_file_is_254(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c"
    f.write_text("")
    assert _explore(tmp_path, "--corpus", str(f)) == 254
    assert f"--corpus {f}: not a directory" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()



# An entry this module's end-to-end search (offsets, no faults, 3 nodes) can use.
_GOOD = Config(workload="offsets", families=(), shapes=("leader",), targets=("one",), interval=1.0,
               mode="random", read_mode="lease", node_count=3, time_limit=2.0, seed=3, rate=10.0)
_BASE = json.dumps(corpus.entry_json(corpus.Entry(_GOOD, frozenset({"op:commit"})), explore_seed=4))


def test_explore_skips_each_damaged_corpus_entry_with_one_line_and_searches_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A file nested 100,000 deep crashed the search with a RecursionError (exit 255); every kind of
    # damage is one line naming the file, and the search goes on from the entries that are whole.
    import os

    d = tmp_path / "corpus"
    d.mkdir()
    (d / "good.json").write_text(_BASE)
    deep = "[" * 100_000 + "]" * 100_000
    damaged: dict[str, str | bytes] = {
        "deep.json": deep,
        "deepfield.json": _BASE.replace('"features": [', '"features": [' + deep + ", ", 1),
        "nan.json": _BASE.replace('"interval": 1.0', '"interval": NaN', 1),
        "infinity.json": _BASE.replace('"time_limit": 2.0', '"time_limit": Infinity', 1),
        "types.json": _BASE.replace('"families": []', '"families": {"kill": 1}', 1),
        "unknown.json": _BASE.replace('"seed": 3', '"seed": 3, "colour": "blue"', 1),
        "torn.json": _BASE[: len(_BASE) // 2],
        "binary.json": b"\xff\xfe" + _BASE.encode(),
        "huge.json": b" " * (corpus.MAX_FILE_BYTES + 1),
        "bigint.json": _BASE.replace('"seed": 3', '"seed": ' + "9" * 5000, 1),
        "ops.json": _BASE.replace('"interval": 1.0', '"interval": 0.001', 1).replace(
            '"time_limit": 2.0', '"time_limit": 3600', 1),
    }
    for name, content in damaged.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        assert (d / name).read_bytes() != _BASE.encode(), name
    os.mkfifo(d / "fifo.json")  # a reader waiting for a writer would hang the search
    code = main(["explore", "--backend", "sim", "--nemesis", "none", "--workload", "offsets",
                 "--node-count", "3", "--time-limit", "2", "--budget", "1", "--seed", "5", "--no-progress",
                 "--corpus", str(d), "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err and "internal error" not in err
    for name in [*damaged, "fifo.json"]:
        lines = [line for line in err.splitlines() if str(d / name) in line]
        assert len(lines) == 1, (name, err)
        assert lines[0].startswith(f"explore: --corpus: skipped {d / name}: "), (name, err)
    assert f"corpus {d}: 1 entries loaded" in err


# Where in an entry a damaged value goes, and the values: deep nesting, wrong types, NaN and
# Infinity, numbers past every bound, unknown names.
_PATHS = [("format",), ("version",), ("features",), ("config",), ("config", "workload"),
          ("config", "families"), ("config", "shapes"), ("config", "targets"), ("config", "interval"),
          ("config", "mode"), ("config", "read_mode"), ("config", "node_count"), ("config", "time_limit"),
          ("config", "seed"), ("config", "clients_per_node"), ("config", "rate"), ("config", "db_options"),
          ("config", "no_such_field"), ("explore_seed",)]
_VALUES = raw_values(["0.0001", "3601", '[["k", "v"]]', '[["k"]]', '[[1, 2]]', '{"kill": 1}',
                       '["kill", "pause"]', '["ring"]', '["leader", "all"]', '"bursts"', '"local"', "9"])


@st.composite
def damaged_entries(draw: st.DrawFn) -> bytes:
    """A valid entry with up to three values replaced by raw JSON text (any of _VALUES), maybe torn,
    maybe with a byte that is not UTF-8."""
    return damaged(draw, json.loads(_BASE), _PATHS, _VALUES)


@example(raw=_BASE.replace('"features": [', '"features": [' + "[" * 100_000 + "]" * 100_000 + ", ").encode())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(raw=damaged_entries())
def test_any_damage_to_an_entry_is_loaded_or_skipped_with_one_line(raw: bytes) -> None:
    """Whatever the damage, the loader never raises: the file is an entry (then one a search can
    run: its label, mutations and op list), an entry outside the space, or one line naming it."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "e.json").write_bytes(raw)
        loaded = corpus.load(d, Space())
    assert len(loaded.entries) + loaded.outside_space + len(loaded.warnings) == 1
    for w in loaded.warnings:
        assert w.startswith(f"skipped {d / 'e.json'}: ") and "\n" not in w and len(w) < 400
    for e in loaded.entries:
        e.config.label()
        assert len(nemesis_events(e.config)) <= 4 * corpus.MAX_FAULT_OPS
        Space().mutate(e.config, random.Random(1))
