"""explore --corpus DIR: entries written as a search reaches new coverage, read back by the next search
into its corpus and seen-counts; a damaged file is a warning, a DIR that is a file is 254."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.errors import BadInput
from jepsen_py.explore import corpus
from jepsen_py.explore.search import Search
from jepsen_py.explore.space import Space
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
