from __future__ import annotations

from jepsen_py.checkers.availability import AvailabilityChecker, Thresholds
from jepsen_py.nemeses.faults import NETWORK, FaultKind, mark

from jepsen_py.history import Op
from tests.checkers.histories import H


def steady(h: H, t0: float, t1: float, *, kind: str = "ok", every: float = 100, proc: int = 0) -> int:
    """One op every `every` ms on process `proc` from t0 to t1; returns the next free process."""
    t = t0
    while t < t1:
        h.op(proc, "fetch", "k", None, t, t + 10, kind=kind, result=1,
             error=None if kind == "ok" else "unavailable")
        if kind == "info":
            proc += 1
        t += every
    return proc


def test_healthy_run_with_fault_and_recovery():
    h = H()
    h.sample(0, "n1", "leader", 1, "n1")
    steady(h, 0, 2000)
    h.nemesis("start-partition", 2000, 2010, {"isolated": ["n1"]})
    steady(h, 2000, 4000, kind="fail")
    h.sample(3000, "n2", "leader", 2, "n2")
    h.nemesis("stop-partition", 4000, 4010, "healed")
    steady(h, 4020, 6000)
    r = AvailabilityChecker().check(None, h.build())
    assert r["valid"] is True, r["problems"]
    assert r["ok_fraction"] == 0.6667
    assert r["ok_fraction_per_second"][:2] == [1.0, 1.0]
    assert r["ok_fraction_per_second"][2:4] == [0.0, 0.0]
    assert r["ok_fraction_per_second"][4:] == [1.0, 1.0]
    assert 2000 <= r["longest_unavailable_ms"] <= 2120
    assert r["leader_changes"] == 1 and r["term_growth"] == 1
    rec = r["recovery"]
    assert rec["recovered"] is True and rec["recovery_ms"] == 20.0 and rec["leaders_after_heal"] == []


def test_a_cluster_that_never_recovers_after_heal_fails_the_run():
    h = H()
    steady(h, 0, 1000)
    h.nemesis("start-partition", 1000, 1010)
    h.nemesis("stop-partition", 2000, 2010)
    steady(h, 1000, 5000, kind="fail")
    r = AvailabilityChecker().check(None, h.build())
    assert r["valid"] is False and r["recovery"]["recovered"] is False
    assert "never served" in r["problems"][0]
    assert r["anomalies"][0]["kind"] == "unavailable"


def test_slow_recovery_fails_only_past_the_threshold():
    h = H()
    steady(h, 0, 1000)
    h.nemesis("kill", 1000, 1010)
    h.nemesis("restart", 2000, 2010)
    steady(h, 1000, 7000, kind="info")
    steady(h, 7000, 8000, proc=1000)
    ops = h.build()
    assert AvailabilityChecker(Thresholds(max_recovery_s=10)).check(None, ops)["valid"] is True
    r = AvailabilityChecker(Thresholds(max_recovery_s=3)).check(None, ops)
    assert r["valid"] is False and "recovery after heal took 5.0 s" in r["problems"][0]


def test_churn_and_ok_fraction_thresholds():
    h = H()
    steady(h, 0, 60_000, every=1000)
    for term in range(1, 301):  # 300 elections in a minute
        h.sample(term * 190, f"n{term % 5 + 1}", "leader", term)
    ops = h.build()
    r = AvailabilityChecker().check(None, ops)
    assert r["valid"] is False and r["terms_per_minute"] > 250 and "churn" in r["problems"][0]
    assert r["leader_changes"] == 299
    off = AvailabilityChecker(Thresholds(max_terms_per_minute=None)).check(None, ops)
    assert off["valid"] is True
    strict = AvailabilityChecker(Thresholds(max_terms_per_minute=None, min_ok_fraction=1.01))
    assert strict.check(None, ops)["valid"] is False


def test_thresholds_from_run_options():
    th = Thresholds.from_options({"availability_max_recovery_s": 5, "availability_max_terms_per_minute": -1})
    assert th.max_recovery_s == 5.0 and th.max_terms_per_minute is None and th.min_ok_fraction is None


def test_no_client_ops_is_unknown():
    h = H()
    h.sample(0, "n1", "leader", 1)
    assert AvailabilityChecker().check(None, h.build())["valid"] == "unknown"


def rejoin(leaderless_ms: float, *, role: str = "pre-candidate") -> list:
    """n3 cut off, healed at 10 s; it stays at applied 100 for `leaderless_ms` while n1, n2 move on."""
    h = H()
    steady(h, 0, 30_000, every=200)
    h.nemesis("start-partition", 1000, 1010, {"shape": "one"})
    h.nemesis("stop-partition", 10_000, 10_010, {"healed": {}})
    t, applied = 0.0, 100
    while t < 30_000:
        applied += 5
        for n in ("n1", "n2"):
            h.sample(t, n, "leader" if n == "n1" else "follower", 2, "n1", applied=applied)
        behind = t < 10_000 + leaderless_ms
        h.sample(t + 1, "n3", role if behind else "follower", 2, None if role != "follower" and behind
                 else "n1", applied=100 if behind else applied)
        t += 100
    return h.build()


def test_a_healed_node_rejoining_for_a_few_seconds_is_not_stuck():
    assert AvailabilityChecker().check(None, rejoin(4000))["valid"] is True


def test_a_healed_node_that_never_rejoins_is_stuck():
    r = AvailabilityChecker().check(None, rejoin(20_000))
    assert r["valid"] is False and "n3 answered for 8 s" in r["problems"][0]


def test_a_follower_catching_up_for_a_few_seconds_after_heal_is_not_stuck():
    # seen on the correct build (metadata, partition-ring + clock): a follower 3-4 s behind after heal
    assert AvailabilityChecker().check(None, rejoin(4000, role="follower"))["valid"] is True


def test_a_follower_that_hears_the_leader_but_never_catches_up_is_stuck():
    r = AvailabilityChecker().check(None, rejoin(20_000, role="follower"))
    assert r["valid"] is False and "n3 answered for 8 s" in r["problems"][0]


def two_restarted(caught_up_after_ms: float) -> list:
    """Five nodes; n4 and n5 killed at 1 s and restarted at 10 s stay at applied 100 for
    `caught_up_after_ms` while n1-n3, a majority, move on."""
    h = H()
    steady(h, 0, 30_000, every=200)
    h.nemesis("kill", 1000, 1010, {"target": "minority", "nodes": ["n4", "n5"]})
    h.nemesis("start", 10_000, 10_010, {"nodes": ["n4", "n5"]})
    t, applied = 0.0, 100
    while t < 30_000:
        applied += 5
        for n in ("n1", "n2", "n3"):
            h.sample(t, n, "leader" if n == "n1" else "follower", 2, "n1", applied=applied)
        if t >= 10_000:
            behind = t < 10_000 + caught_up_after_ms
            for n in ("n4", "n5"):
                h.sample(t + 1, n, "follower", 2, "n1", applied=100 if behind else applied)
        t += 100
    return h.build()


def test_two_restarted_nodes_stuck_together_are_both_stuck():
    # seen on Docker (drop-unconnected, a minority kill of two): each stuck node had the other as
    # the "other node" that had not moved on, so neither was reported though a majority had
    r = AvailabilityChecker().check(None, two_restarted(20_000))
    assert r["valid"] is False
    assert {p.split()[0] for p in r["problems"] if "stopped receiving the log" in p} == {"n4", "n5"}


def test_two_restarted_nodes_catching_up_in_a_few_seconds_are_not_stuck():
    assert AvailabilityChecker().check(None, two_restarted(3000))["valid"] is True


def one_key_refused(*, during_fault: bool) -> list:
    """Key "b" sees only refused commits for 4 s while key "a" is served all along."""
    h = H()
    if during_fault:
        h.nemesis("start-partition", 900, 910, {"shape": "one"})
    t, v = 0.0, 0
    while t < 6000:
        v += 1
        h.op(0, "commit", "a", v, t, t + 10)
        if 1000 <= t < 5000:
            h.op(1, "commit", "b", v, t + 20, t + 30, kind="fail", error="unavailable")
        t += 100
    if during_fault:
        h.nemesis("stop-partition", 5500, 5510, {"healed": {}})
    return h.build()


def test_a_key_refused_with_no_fault_active_is_unavailable_data():
    # leader-on-follower's signature: its partitions refuse every write while others are served
    r = AvailabilityChecker().check(None, one_key_refused(during_fault=False))
    assert r["valid"] is False
    assert any("every one of 40 commit ops on 'b' was refused" in p for p in r["problems"])


def test_a_key_refused_only_under_a_fault_is_not_a_finding():
    # a correct cluster may refuse a short-lived key's writes while a partition is in force
    r = AvailabilityChecker().check(None, one_key_refused(during_fault=True))
    assert not any("every one of" in p for p in r["problems"]), r["problems"]


def test_a_restart_ends_the_kill_but_not_a_partition_still_in_force():
    # Seen in the matrix: kill n3, cut the cluster in two while it is down, restart it (still cut
    # off), heal. The restart's moment is not quiet: the partition still holds n3 apart.
    from jepsen_py.checkers.availability import quiet_stretches

    h = H()
    h.sample(0, "n1", "leader", 1, "n1")
    h.nemesis("kill", 10_000, 10_100, {"target": "leader", "nodes": ["n3"]})
    h.nemesis("start-partition", 20_000, 21_000, {"shape": "random", "sides": [["n1", "n3"], ["n2"]]})
    h.nemesis("start", 30_000, 30_200, {"nodes": ["n3"]})
    h.nemesis("heal", 40_000, 40_500, "healed")
    h.sample(50_000, "n1", "leader", 1, "n1")
    hist = h.build()
    ms = [(a // 1_000_000, b // 1_000_000) for a, b in quiet_stretches(hist, 50_000 * 1_000_000)]
    assert ms == [(0, 10_000), (40_500, 50_000)]  # before the first fault is quiet too
    # one fault at a time: quiet between the undo and the next fault
    h = H()
    h.sample(0, "n1", "leader", 1, "n1")
    h.nemesis("kill", 10_000, 10_100, {"nodes": ["n3"]})
    h.nemesis("start", 20_000, 20_200, {"nodes": ["n3"]})
    h.nemesis("start-partition", 30_000, 31_000, {"shape": "one", "sides": [["n2"], ["n1", "n3"]]})
    h.nemesis("stop-partition", 40_000, 40_300)
    ms = [(a // 1_000_000, b // 1_000_000) for a, b in quiet_stretches(h.build(), 50_000 * 1_000_000)]
    assert ms == [(0, 10_000), (20_200, 30_000), (40_300, 50_000)]


#: An outside nemesis's network fault: "isolate" cuts a node off, "rejoin" heals it. Neither name
#: follows the start-/stop- rule, so only the declaration says that rejoin ends isolate.
ISOLATE = FaultKind("isolation", frozenset({"isolate"}), frozenset({"rejoin"}), frozenset({NETWORK}))


def disruptive_rejoin(*, fault: str = "start-partition", isolated_value: dict | None = None,
                      stop: str | None = None, declared: FaultKind | None = None) -> list:
    """n1 leads term 8 and is cut off at 2 s; n2 takes over in term 9 while n1, alone, runs its term
    up to 18. Healed at 10 s; n1 is still at 18 when it is next seen and deposes n2: n3 leads 19.
    `declared`: the fault's ops carry that declaration, as an outside nemesis's ops do."""
    h = H()
    steady(h, 0, 20_000, every=200)
    value = isolated_value if isolated_value is not None else {
        "shape": "leader", "leader": "n1", "sides": [["n1"], ["n2", "n3"]],
        "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}}
    if stop is None:
        stop = "stop-partition" if fault == "start-partition" else "stop-leader-clock"
    if fault:
        meta = mark(Op(0, 0, "info", "nemesis", fault), declared).meta if declared else {}
        h.nemesis(fault, 2000, 2010, value, meta=meta)
        h.nemesis(stop, 10_000, 10_010, {"healed": True}, meta=meta)
    t = 0.0
    while t < 20_000:
        if t < 2000:
            roles, terms = {"n1": "leader", "n2": "follower", "n3": "follower"}, {"n1": 8, "n2": 8, "n3": 8}
        elif t < 14_000:
            up = min(18, 8 + int((t - 2000) // 800))
            roles = {"n1": "candidate", "n2": "leader", "n3": "follower"}
            terms = {"n1": up, "n2": 9, "n3": 9}
        else:
            roles = {"n1": "follower", "n2": "follower", "n3": "leader"}
            terms = {"n1": 19, "n2": 19, "n3": 19}
        for i, n in enumerate(("n1", "n2", "n3")):
            h.sample(t + i, n, roles[n], terms[n], next((m for m, r in roles.items() if r == "leader"), None))
        t += 100
    return h.build()


def test_a_term_jump_after_isolation_names_the_node_and_the_deposed_leader():
    r = AvailabilityChecker().check(None, disruptive_rejoin())
    churn = [a for a in r["anomalies"] if a["kind"] == "election-churn"]
    assert r["valid"] is False and len(churn) == 1, r["problems"]
    text = churn[0]["explanation"]
    assert text.startswith("n1's term jumped from 8 to 18 while it was isolated (start-partition, healed ")
    assert "on its return the leader n2 (term 9) was deposed and n3 took over in term 19" in text
    assert "no fault active" in text  # the churn itself was still outside any fault


def test_a_leader_clock_isolation_is_named_too():
    value = {"node": "n1", "clock-back-ms": 900, "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}}
    r = AvailabilityChecker().check(None, disruptive_rejoin(fault="start-leader-clock", isolated_value=value))
    text = next(a["explanation"] for a in r["anomalies"] if a["kind"] == "election-churn")
    assert "n1's term jumped from 8 to 18 while it was isolated (start-leader-clock" in text
    assert "leader n2 (term 9) was deposed" in text


def test_an_outside_nemesis_that_declares_its_network_fault_is_read_as_a_built_in_one():
    value = {"node": "n1"}
    r = AvailabilityChecker().check(None, disruptive_rejoin(fault="isolate", stop="rejoin",
                                                            isolated_value=value, declared=ISOLATE))
    text = next(a["explanation"] for a in r["anomalies"] if a["kind"] == "election-churn")
    assert text.startswith("n1's term jumped from 8 to 18 while it was isolated (isolate, healed ")
    assert "on its return the leader n2 (term 9) was deposed and n3 took over in term 19" in text
    # undeclared, "rejoin" reads as a second fault: nothing is ever quiet again, no churn is judged
    r = AvailabilityChecker().check(None, disruptive_rejoin(fault="isolate", stop="rejoin",
                                                            isolated_value=value))
    assert not any(a["kind"] == "election-churn" for a in r["anomalies"]), r["anomalies"]


def test_a_term_jump_with_no_isolation_says_so():
    # a partition that cut off n2, not n1: n1's jump is not explained by it
    value = {"shape": "one", "sides": [["n2"], ["n1", "n3"]], "grudge": {}}
    r = AvailabilityChecker().check(None, disruptive_rejoin(isolated_value=value))
    text = next(a["explanation"] for a in r["anomalies"] if a["kind"] == "election-churn")
    # its last term level with the others' is where it stood before it ran ahead
    assert text.startswith("n1's term jumped from 9 to 18; then the leader n2 (term 9) was deposed")
    assert "isolated" not in text


def refused_across_faults(*, refused_when: str) -> list:
    """30 s; a partition 5-10 s and a kill 15-20 s, then the final phase. Key "a" is served outside
    the faults; key "b" is refused `always`, or only while a fault (or its undo's election) lasts."""
    h = H()
    h.nemesis("start-partition", 5000, 5010, {"shape": "one", "sides": [["n3"], ["n1", "n2"]]})
    h.nemesis("stop-partition", 10_000, 10_010, {"healed": {}})
    h.nemesis("kill", 15_000, 15_010, {"nodes": ["n1"]})
    h.nemesis("start", 20_000, 20_010, {"nodes": ["n1"]})
    t, v = 0.0, 0
    while t < 30_000:
        v += 1
        faulty = 5000 <= t < 12_000 or 15_000 <= t < 22_000  # the fault, then an election's worth
        h.op(0, "commit", "a", v, t, t + 10, kind="fail" if faulty else "ok",
             error="unavailable" if faulty else None)
        refused = refused_when == "always" or faulty
        h.op(1, "commit", "b", v, t + 20, t + 30, kind="fail" if refused else "ok",
             error="not_leader" if refused else None)
        t += 250
    return h.build()


def test_a_key_refused_in_and_out_of_fault_windows_is_a_finding():
    # faults were active for part of the run, but they do not excuse refusals that persist outside
    # every fault window and after the final heal
    r = AvailabilityChecker().check(None, refused_across_faults(refused_when="always"))
    assert r["valid"] is False
    [dead] = r["unavailable_keys"]
    assert dead["key"] == "b" and dead["attempts"] == 120
    assert dead["refused_after_final_heal"] == 28 and 28 < dead["refused_with_no_fault"] < 120
    assert "every one of 120 commit ops on 'b' was refused (not_leader)" in dead["explanation"]
    assert "(28 after the final heal)" in dead["explanation"]


def test_a_key_refused_only_while_faults_last_is_not_accused():
    # the correct build: writes fail while a fault (and the election after its undo) lasts, and
    # succeed everywhere else
    r = AvailabilityChecker().check(None, refused_across_faults(refused_when="faults"))
    assert r["unavailable_keys"] == [] and r["valid"] is True, r["problems"]


def test_a_short_key_refused_under_faults_and_their_elections_is_not_accused():
    # a key written only around the faults, refused every time, never in settled quiet time
    h = H()
    h.nemesis("start-partition", 5000, 5010, {"shape": "one"})
    h.nemesis("stop-partition", 10_000, 10_010, {"healed": {}})
    h.nemesis("kill", 15_000, 15_010, {"nodes": ["n1"]})
    h.nemesis("start", 20_000, 20_010, {"nodes": ["n1"]})
    t, v = 0.0, 0
    while t < 30_000:
        v += 1
        h.op(0, "commit", "a", v, t, t + 10)
        if 5000 <= t < 12_000 or 15_000 <= t < 22_000:
            h.op(1, "commit", "b", v, t + 20, t + 30, kind="fail", error="unavailable")
        t += 250
    r = AvailabilityChecker().check(None, h.build())
    assert r["unavailable_keys"] == [], r["unavailable_keys"]


def test_a_key_refused_before_the_first_fault_is_a_finding():
    # Seen in a simulated leader-on-follower run: every key refused from the start, a kill at 10 s
    # that lasted to the end: the 10 s before anyone touched the cluster have no fault to blame.
    h = H()
    t, v = 0.0, 0
    while t < 20_000:
        v += 1
        h.op(0, "commit", "a", v, t, t + 10)
        if t < 4000:
            h.op(1, "commit", "b", v, t + 20, t + 30, kind="fail", error="unavailable")
        t += 100
    h.nemesis("kill", 10_000, 10_010, {"nodes": ["n5"]})
    h.nemesis("heal", 19_000, 19_010, "healed")
    r = AvailabilityChecker().check(None, h.build())
    assert [k["key"] for k in r["unavailable_keys"]] == ["b"], r["problems"]
