from __future__ import annotations

from pathlib import Path

from jepsen_py.checkers.crash import CrashChecker

from tests.checkers.histories import H


def poll(h: H, node: str, t0: float, t1: float, *, answered: bool = True, every: float = 100) -> None:
    t = t0
    while t < t1:
        h.sample(t, node, "follower", 1, "n1", answered=answered)
        t += every


def test_a_killed_node_that_comes_back_is_not_a_crash():
    h = H()
    poll(h, "n1", 0, 20_000)
    poll(h, "n2", 0, 5_000)
    # The kill nemesis's own shapes: invoke value is the target, the completion names the nodes.
    h.nemesis("kill", 5_050, 5_080, {"target": "leader", "nodes": ["n2"], "results": {"n2": "ok"}})
    poll(h, "n2", 5_100, 12_000, answered=False)
    h.nemesis("start", 12_000, 12_500, {"nodes": ["n2"], "results": {"n2": "ok"}})
    poll(h, "n2", 12_600, 20_000)
    r = CrashChecker().check(None, h.build())
    assert r["valid"] is True, r["findings"]
    assert r["outages"]["n2"][0]["explained_by_fault"] is True


def test_the_leader_clock_fault_explains_its_frozen_node_only():
    # The fault freezes its node while it installs the cut; on a loaded machine that took 17 s.
    h = H()
    poll(h, "n1", 0, 40_000)
    poll(h, "n2", 0, 5_000)
    poll(h, "n3", 0, 5_000)
    value = {"node": "n2", "clock-back-ms": 31_000,
             "grudge": {"n1": ["n2"], "n2": ["n1", "n3"], "n3": ["n2"]}}
    h.nemesis("start-leader-clock", 5_050, 22_000, value)
    poll(h, "n2", 5_100, 22_000, answered=False)
    poll(h, "n3", 5_100, 22_000, answered=False)  # the grudge names n3, yet nothing froze it
    poll(h, "n2", 22_100, 40_000)
    poll(h, "n3", 22_100, 40_000)
    h.nemesis("stop-leader-clock", 30_000, 30_500, {"healed": True})
    r = CrashChecker().check(None, h.build())
    assert [(f["node"], f["kind"]) for f in r["findings"]] == [("n3", "died")]


def test_a_node_that_dies_with_no_fault_aimed_at_it_is_found():
    h = H()
    poll(h, "n1", 0, 20_000)
    poll(h, "n2", 0, 5_000)
    h.nemesis("kill", 5_050, 5_080, {"killed": ["n1"]})  # aimed at someone else
    poll(h, "n2", 5_100, 12_000, answered=False)
    poll(h, "n2", 12_000, 20_000)
    h.nemesis("start-partition", 15_000, 15_010)
    h.nemesis("stop-partition", 16_000, 16_010)
    r = CrashChecker(min_down_s=5).check(None, h.build())
    assert r["valid"] is False
    (f,) = r["findings"]
    assert f["node"] == "n2" and f["kind"] == "died" and "6.9 s" in f["explanation"]
    # The default threshold is longer (CPU-starved nodes miss polls for seconds): not a finding there.
    assert CrashChecker().check(None, h.build())["valid"] is True
    assert r["anomalies"][0]["kind"] == "crash"


def test_a_short_missed_poll_is_not_a_crash():
    h = H()
    poll(h, "n1", 0, 2_000)
    poll(h, "n1", 2_000, 3_000, answered=False)
    poll(h, "n1", 3_000, 6_000)
    assert CrashChecker().check(None, h.build())["valid"] is True


def test_a_node_still_down_well_after_heal_crashed_on_restart():
    h = H()
    poll(h, "n3", 0, 4_000)
    h.nemesis("kill", 4_000, 4_010, {"killed": ["n3"]})
    poll(h, "n3", 4_100, 20_000, answered=False)
    h.nemesis("start", 10_000, 10_500, {"started": ["n3"]})
    r = CrashChecker().check(None, h.build())
    assert r["valid"] is False and r["findings"][0]["kind"] == "down-at-end"
    # Just healed, not yet back: not (yet) a finding.
    h2 = H()
    poll(h2, "n3", 0, 4_000)
    h2.nemesis("kill", 4_000, 4_010, {"killed": ["n3"]})
    poll(h2, "n3", 4_100, 11_000, answered=False)
    h2.nemesis("start", 10_000, 10_500, {"started": ["n3"]})
    assert CrashChecker().check(None, h2.build())["valid"] is True


def test_a_kill_explains_the_silence_until_the_restart_not_after_it():
    # A node killed and restarted mid-run that never answers again (it recovered two versions of a
    # log entry from its WAL and spins): the kill explains its silence up to the restart only. Seen
    # on Docker: 55 s of silence after the restart, excused by the kill before it.
    h = H()
    poll(h, "n1", 0, 80_000)
    poll(h, "n2", 0, 20_000)
    h.nemesis("kill", 20_000, 20_100, {"target": "one", "nodes": ["n2"], "results": {"n2": "ok"}})
    h.nemesis("start", 25_000, 25_200, {"nodes": ["n2"], "results": {"n2": "ok"}})
    poll(h, "n2", 20_200, 78_000, answered=False)
    h.nemesis("kill", 60_000, 60_100, {"target": "one", "nodes": ["n1"], "results": {"n1": "ok"}})
    h.nemesis("start", 62_000, 62_200, {"nodes": ["n1"], "results": {"n1": "ok"}})
    poll(h, "n2", 78_000, 80_000)  # a later restart (say) brought it back before the end
    r = CrashChecker().check(None, h.build())
    assert r["valid"] is False
    (f,) = r["findings"]
    assert f["node"] == "n2" and f["kind"] == "not-back", f
    assert "undone at 25.2 s" in f["explanation"] and "50.8 s" in f["explanation"], f
    # Still silent at the end, with the run ending right after the heal (no down-at-end yet): the
    # same finding, not an excuse.
    h2 = H()
    poll(h2, "n1", 0, 60_000)
    poll(h2, "n2", 0, 20_000)
    h2.nemesis("kill", 20_000, 20_100, {"target": "one", "nodes": ["n2"], "results": {"n2": "ok"}})
    h2.nemesis("start", 25_000, 25_200, {"nodes": ["n2"], "results": {"n2": "ok"}})
    poll(h2, "n2", 20_200, 60_000, answered=False)
    h2.nemesis("heal", 58_000, 58_500, "healed")
    r2 = CrashChecker().check(None, h2.build())
    assert [(f["node"], f["kind"]) for f in r2["findings"]] == [("n2", "not-back")]


def test_back_within_the_grace_or_hit_again_is_not_a_crash():
    # A restart that takes a while on a loaded machine (10 s to answer), and a node killed again
    # before it came back: each silence is covered by a fault aimed at it, give or take the grace.
    h = H()
    poll(h, "n1", 0, 80_000)
    poll(h, "n2", 0, 20_000)
    h.nemesis("kill", 20_000, 20_100, {"target": "one", "nodes": ["n2"], "results": {"n2": "ok"}})
    h.nemesis("start", 25_000, 25_200, {"nodes": ["n2"], "results": {"n2": "ok"}})
    poll(h, "n2", 20_200, 35_200, answered=False)
    poll(h, "n2", 35_200, 40_000)
    h.nemesis("kill", 40_000, 40_100, {"target": "one", "nodes": ["n2"], "results": {"n2": "ok"}})
    h.nemesis("start", 45_000, 45_200, {"nodes": ["n2"], "results": {"n2": "ok"}})
    h.nemesis("pause", 55_000, 55_100, {"target": "one", "nodes": ["n2"], "results": {"n2": "ok"}})
    h.nemesis("resume", 65_000, 65_100, {"nodes": ["n2"], "results": {"n2": "ok"}})
    poll(h, "n2", 40_200, 70_000, answered=False)
    poll(h, "n2", 70_000, 80_000)
    r = CrashChecker().check(None, h.build())
    assert r["valid"] is True, r["findings"]


def test_a_traceback_in_a_node_log_fails_the_run(tmp_path: Path):
    h = H()
    poll(h, "n1", 0, 1_000)
    ops = h.build()
    (tmp_path / "nodes" / "n1").mkdir(parents=True)
    (tmp_path / "nodes" / "n2").mkdir(parents=True)
    (tmp_path / "nodes" / "n1" / "node.log").write_text("role follower term 1\nall good\n")
    (tmp_path / "nodes" / "n2" / "wal").write_bytes(b"\0\0Traceback (most recent call last)\0")  # binary
    assert CrashChecker(store_dir=tmp_path).check(None, ops)["valid"] is True
    (tmp_path / "nodes" / "n2" / "node.log").write_text(
        "started\nTraceback (most recent call last):\n  File \"wal.py\", line 3, in recover\n"
        "    raise ValueError(x)\nValueError: two entries for index 17\n")
    r = CrashChecker(store_dir=tmp_path).check(None, ops)
    assert r["valid"] is False and r["logs_scanned"] == 2
    (f,) = r["findings"]
    assert f["kind"] == "traceback" and f["node"] == "n2"
    assert f["explanation"] == "nodes/n2/node.log:2: ValueError: two entries for index 17"


def test_nothing_to_judge_by_is_unknown():
    h = H()
    h.op(0, "fetch", "k", None, 0, 1, result=None)
    assert CrashChecker().check(None, h.build())["valid"] == "unknown"
