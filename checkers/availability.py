"""Availability and churn: did the cluster serve, how long was it down, did it come back after heal?

Safety checkers pass a cluster that refuses everything; this one does not. From the client ops it
measures the ok fraction per second and the longest stretch with attempts but no success; from the
observer's samples (and what completions said of their server) the leader changes and term growth per
minute (election churn: the unordered-send bug makes terms grow by hundreds). The hard line is
recovery: once the last fault is healed, an ok client op must follow within `max_recovery_s`, or the
run fails, whatever the nemesis did before. Other thresholds are off (None) unless asked for.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from jepsen_py.checkers.samples import Sample, leader_claims, samples
from jepsen_py.nemeses.faults import NETWORK, FaultWindow, fault_windows, windows_of_pairs
from jepsen_py.nemeses.targets import majority

from jepsen_py.history import NEMESIS, OBSERVER, OK, Op, pairs
from jepsen_py.protocols import Test

S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When availability fails a run. None: report only."""

    max_recovery_s: float | None = 30.0
    min_ok_fraction: float | None = None
    max_unavailable_s: float | None = None
    max_terms_per_minute: float | None = 120.0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Thresholds:
        """Reads `availability_<field>` keys (the run command's --availability-* flags)."""
        d = cls()
        kw: dict[str, Any] = {}
        for f in ("max_recovery_s", "min_ok_fraction", "max_unavailable_s", "max_terms_per_minute"):
            v = options.get(f"availability_{f}", getattr(d, f))
            kw[f] = None if v is None or (isinstance(v, int | float) and v < 0) else float(v)
        return cls(**kw)


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


class AvailabilityChecker:
    """Ok fraction per second, longest outage, churn, recovery after heal."""

    name = "availability"

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        th = self.thresholds
        ps = [p for p in pairs(history) if isinstance(p.invoke.process, int)]
        if not ps:
            return {"valid": "unknown", "reason": "no client ops", "thresholds": asdict(th)}
        start = min(p.invoke.time for p in ps)
        end = max(op.time for op in history)
        ok_times = sorted(p.complete.time for p in ps if p.type == OK and p.complete is not None)
        attempt_times = sorted(
            [p.invoke.time for p in ps] + [p.complete.time for p in ps if p.complete is not None])

        # Ok fraction per second, by completion time (ops that never completed count where invoked).
        n_sec = int((end - start) // S) + 1
        total = [0] * n_sec
        oks = [0] * n_sec
        for p in ps:
            t = p.complete.time if p.complete is not None else p.invoke.time
            b = min(int((t - start) // S), n_sec - 1)
            total[b] += 1
            oks[b] += p.type == OK
        per_second = [round(o / t, 4) if t else None for o, t in zip(oks, total, strict=True)]
        ok_fraction = round(sum(oks) / sum(total), 4)

        outage = _longest_outage(start, end, ok_times, attempt_times)

        # Churn, from who claimed leadership of which term. Without observer samples (a DB with no
        # status, e.g. a leaderless one) only what the clients saw is judged.
        observed = any(op.process == OBSERVER for op in history)
        claims = leader_claims(history)
        sampled = samples(history)  # read once: the observer's samples are most of a history
        terms = [s.term for s in sampled if s.term is not None] + [c.term for c in claims]
        minutes = max((end - start) / (60 * S), 1 / 60)
        leader_changes = max(len({c.term for c in claims}) - 1, 0)
        term_growth = (max(terms) - min(terms)) if terms else 0

        # Recovery: the first ok client op invoked after the last fault op finished.
        nemesis_done = [op.time for op in history if op.process == NEMESIS and op.type != "invoke"]
        heal = max(nemesis_done) if nemesis_done else None
        recovery: dict[str, Any]
        if heal is None:
            recovery = {"faults": False, "recovered": bool(ok_times)}
        else:
            after = [p.complete for p in ps if p.type == OK and p.complete is not None
                     and p.invoke.time >= heal]
            first = min(after, key=lambda o: o.time) if after else None
            leaders_after = sorted({s.node for s in sampled if s.time >= heal and s.role == "leader"}
                                   | {c.node for c in claims if c.time >= heal})
            recovery = {
                "faults": True,
                "healed_at_ms": _ms(heal - start),
                "recovered": first is not None,
                "recovery_ms": None if first is None else _ms(first.time - heal),
                "first_ok_after_heal": None if first is None else first.index,
                "ok_after_heal": len(after),
                "leaders_after_heal": leaders_after,
            }

        problems: list[str] = []
        if not recovery["recovered"]:
            problems.append("the cluster never served an ok op after the faults were healed"
                            if heal is not None else "the cluster never served an ok op")
        elif (th.max_recovery_s is not None and recovery.get("recovery_ms") is not None
              and recovery["recovery_ms"] > th.max_recovery_s * 1000):
            problems.append(f"recovery after heal took {recovery['recovery_ms'] / 1000:.1f} s "
                            f"(limit {th.max_recovery_s:g} s)")
        if th.min_ok_fraction is not None and ok_fraction < th.min_ok_fraction:
            problems.append(f"ok fraction {ok_fraction:.3f} below {th.min_ok_fraction:g}")
        if th.max_unavailable_s is not None and outage["ms"] > th.max_unavailable_s * 1000:
            problems.append(f"unavailable for {outage['ms'] / 1000:.1f} s "
                            f"(limit {th.max_unavailable_s:g} s)")
        tpm = term_growth / minutes
        churn: list[tuple[str, list[int]]] = []
        if th.max_terms_per_minute is not None and tpm > th.max_terms_per_minute:
            churn.append((f"terms grew {tpm:.0f} per minute (limit {th.max_terms_per_minute:g}): "
                          "election churn", []))
        if th.max_terms_per_minute is not None and observed:  # one switch turns both churn checks off
            churn += _quiet_churn(history, end, sampled)
        first = min(op.time for op in history)
        settled = [(a if a == first else a + int(QUIET_GRACE_S * S), b)  # an undo costs an election
                   for a, b in quiet_stretches(history, end)]
        dead_keys = (_dead_keys(ps, settled, faulted=heal is not None)
                     + (_stuck_nodes(history, end) if observed else []))
        return {
            "valid": not (problems or churn or dead_keys),
            "basis": "clients+observer" if observed else "clients",
            "problems": problems + [c for c, _ in churn] + [k["explanation"] for k in dead_keys],
            "ok_fraction": ok_fraction,
            "ok_fraction_per_second": per_second,
            "longest_unavailable_ms": outage["ms"],
            "longest_unavailable": outage,
            "leader_changes": leader_changes,
            "leader_changes_per_minute": round(leader_changes / minutes, 2),
            "term_growth": term_growth,
            "terms_per_minute": round(tpm, 2),
            "leaders": [{"term": c.term, "node": c.node, "seen_ms": _ms(c.time - start)}
                        for c in claims[:500]],
            "recovery": recovery,
            "thresholds": asdict(th),
            "unavailable_keys": dead_keys,
            "anomalies": [{"kind": "unavailable", "ops": [], "explanation": p} for p in problems]
            + [{"kind": "election-churn", "ops": ops, "explanation": c} for c, ops in churn]
            + [{"kind": "unavailable", "ops": k["ops"], "explanation": k["explanation"]} for k in dead_keys],
        }


#: A key is "dead" when at least this many of its writes were refused while at least this many ok
#: ops of other keys completed within the same stretch of time.
DEAD_KEY_MIN = 10
REFUSALS = frozenset({"unavailable", "not_leader"})


def _dead_keys(ps: Sequence[Any], settled: Sequence[tuple[int, int]], *,
               faulted: bool = False) -> list[dict[str, Any]]:
    """Keys whose every write was refused (unavailable / not leader) while the cluster served other
    keys at the same time, with no fault active: unavailability of part of the data, which a
    cluster-wide outage (every key down together) never produces. The leader-on-follower bug's
    signature: partitions led by a node that cannot propose refuse every commit for the whole run.

    A fault does not excuse it: the key may be refused in and out of fault windows alike. Under a
    fault a correct cluster may refuse a key's writes, so only the refusals that lie wholly inside
    `settled` (the stretches with no fault active, less an election's grace after an undo) are
    counted, and at least DEAD_KEY_MIN of them must have been refused while at least DEAD_KEY_MIN ok
    ops of other keys completed in those same stretches. Refusals after the final heal are what
    tell "never available" from "unavailable during a fault"; the explanation says how many."""
    by_key: dict[tuple[str, Any], list[Any]] = {}
    for p in ps:
        if p.invoke.key is None or p.invoke.value is None:
            continue  # reads carry no value; only writes can be refused for lack of a proposer
        try:
            k = (p.invoke.f, p.invoke.key if not isinstance(p.invoke.key, list) else tuple(p.invoke.key))
            hash(k)
        except TypeError:
            continue
        by_key.setdefault(k, []).append(p)
    oks = sorted(p.complete.time for p in ps if p.type == OK and p.complete is not None)
    final = settled[-1] if settled else None
    found = []
    for (f, key), kps in by_key.items():
        if len(kps) < DEAD_KEY_MIN or any(p.type == OK for p in kps):
            continue
        if not all(p.complete is not None and p.complete.error in REFUSALS for p in kps):
            continue
        quiet: dict[tuple[int, int], list[Any]] = {}
        for p in kps:
            st = next(((a, b) for a, b in settled if a <= p.invoke.time and p.complete.time <= b), None)
            if st is not None:
                quiet.setdefault(st, []).append(p)
        counted = [p for qs in quiet.values() for p in qs]
        if len(counted) < DEAD_KEY_MIN:
            continue
        # other keys' ok ops over the same quiet spans: the cluster was serving, just not this key
        others = sum(bisect.bisect_right(oks, max(p.complete.time for p in qs))
                     - bisect.bisect_left(oks, min(p.invoke.time for p in qs)) for qs in quiet.values())
        if others < DEAD_KEY_MIN:
            continue
        lo = min(p.invoke.time for p in kps)
        hi = max(p.complete.time for p in kps)
        after_heal = len(quiet.get(final, [])) if faulted and final is not None else 0
        where = (f", {len(counted)} of them with no fault active"
                 + (f" ({after_heal} after the final heal)" if after_heal else "")
                 if len(counted) < len(kps) else "")
        found.append({
            "f": f, "key": key if not isinstance(key, tuple) else list(key), "attempts": len(kps),
            "refused_with_no_fault": len(counted), "refused_after_final_heal": after_heal,
            "ops": [p.complete.index for p in counted[:5]],
            "explanation": (f"every one of {len(kps)} {f} ops on {key!r} was refused "
                            f"({kps[0].complete.error}) over {_ms(hi - lo) / 1000:.1f} s{where}, while "
                            f"{others} other ops succeeded: that part of the data was unavailable"),
        })
    return found


#: A node is stuck when, with no fault active, it answers the observer for this long without
#: reaching what the other nodes had already applied when the stretch began. A correct node that
#: was cut off, paused or had its clock reset takes 3-4 s to rejoin (reconnect backoff; measured in
#: the matrix's partition and clock runs, as a follower and as a pre-candidate alike): 8 s leaves room
#: for that, while drop-unconnected's replica never catches up at all.
STUCK_S = 8.0


def quiet_stretches(history: Sequence[Op], end: int) -> list[tuple[int, int]]:
    """(from, to) times with no fault active: from the history's start, or the moment the last fault
    in force was undone, to the next fault's invocation (or the end). Before the first fault counts:
    a cluster that refuses or churns before anyone touched it has no fault to blame.

    Faults overlap: a restart ends the kill, not the partition that began while the node was down,
    so each undo closes only the fault it undoes (the fault vocabulary's pairing), and a stretch is quiet only
    when no fault at all is open.
    """
    nem = [p for p in pairs(history) if p.invoke.process == NEMESIS]
    first = min((op.time for op in history), default=0)
    if not nem:
        return [(first, end)]
    busy = sorted((w.start, w.end if w.end is not None else end) for w in windows_of_pairs(nem))
    # nemesis ops still being carried out count as busy too (an undo is in force once it completes)
    busy += [(p.invoke.time, p.complete.time if p.complete is not None else end) for p in nem]
    busy.sort()
    quiet: list[tuple[int, int]] = [(first, busy[0][0])] if first < busy[0][0] else []
    reach = busy[0][1]
    for a, b in busy[1:]:
        if a > reach:
            quiet.append((reach, a))
        reach = max(reach, b)
    if reach < end:
        quiet.append((reach, end))
    return quiet


#: With no fault active, PreVote and CheckQuorum leave a healthy cluster at most one election (a
#: rejoining node's) per quiet stretch; more terms than this in one is election churn.
QUIET_MAX_TERMS = 5
#: An undo may cost one election right after it: terms are counted from this long after it.
QUIET_GRACE_S = 3.0


def _quiet_churn(history: Sequence[Op], end: int, sampled: Sequence[Sample]) -> list[tuple[str, list[int]]]:
    """Election churn with no fault to blame (the unordered-send bug's signature, or a node that ran
    up its term while cut off and deposes the leader when it returns): explanation and the observer
    sample at which the terms had grown past the limit. `sampled`: samples(history)."""
    smp = [sm for sm in sampled if sm.term is not None]
    windows: list[FaultWindow] | None = None
    out = []
    for a, b in quiet_stretches(history, end):
        a2 = a + int(QUIET_GRACE_S * S)
        seen = [sm for sm in smp if a2 <= sm.time <= b]
        if len(seen) < 2:
            continue
        lo = min(sm.term for sm in seen if sm.term is not None)
        hi = max(sm.term for sm in seen if sm.term is not None)
        if hi - lo > QUIET_MAX_TERMS:
            at = next(sm for sm in seen if sm.term is not None and sm.term > lo + QUIET_MAX_TERMS)
            if windows is None:
                windows = fault_windows(history, nodes={sm.node for sm in smp})
            why = _who_jumped(smp, windows, at, a, lo)
            out.append((f"{why}terms grew from {lo} to {hi} within {(b - a2) / S:.1f} s with no fault "
                        "active: election churn", [at.index]))
    return out


#: A fault that ended this long before a node's term jumped is the isolation it is returning from.
RETURN_S = 10.0


def isolated_nodes(w: FaultWindow) -> frozenset[str]:
    """The nodes a partition or leader-clock fault cut off from the majority: the node it names
    (the isolated leader), else every side smaller than the largest. Empty for other faults."""
    if w.kind is None or NETWORK not in w.kind.effects or not isinstance(w.value, dict):
        return frozenset()
    said = w.value.get("node", w.value.get("leader"))
    if isinstance(said, str):
        return frozenset({said})
    sides = w.value.get("sides")
    if isinstance(sides, list) and all(isinstance(x, list) for x in sides) and len(sides) > 1:
        big = max(len(x) for x in sides)
        return frozenset(str(n) for x in sides if len(x) < big for n in x)
    return frozenset()


def _who_jumped(smp: Sequence[Sample], windows: Sequence[FaultWindow], at: Sample, quiet_from: int,
                low: int) -> str:
    """Which node's term ran ahead, whether it was returning from isolation, and whom it deposed."""
    node = at.node
    mine = [sm for sm in smp if sm.node == node and sm.term is not None]
    back = [w for w in windows if w.end is not None and quiet_from - int(RETURN_S * S) <= w.end <= at.time
            and node in isolated_nodes(w)]
    cut = max(back, key=lambda w: w.end or 0) if back else None
    since = cut.start if cut is not None else at.time
    # where it stood before it ran ahead: its last term no higher than the others' in the quiet stretch
    before = [sm.term for sm in mine if sm.time < since and sm.term is not None and sm.term <= low]
    start_term = before[-1] if before else min(sm.term for sm in mine if sm.time <= at.time)
    text = f"{node}'s term jumped from {start_term} to {at.term}"
    if cut is not None:
        text += (f" while it was isolated ({cut.f}, healed {(at.time - (cut.end or at.time)) / S:.1f} s "
                 "before it was seen)")
    # the leader in force when the jump was seen, and whether it lost its leadership to it
    leads = [sm for sm in smp if sm.role == "leader" and sm.node != node and sm.time <= at.time
             and sm.term is not None and sm.term < (at.term or 0)]
    if leads:
        old = leads[-1]
        later = [sm for sm in smp if sm.time >= at.time and sm.term is not None and sm.term >= (at.term or 0)]
        deposed = next((sm for sm in later if sm.node == old.node), None)
        if deposed is not None:
            new = next((sm for sm in later if sm.role == "leader"), None)
            when = "on its return" if cut is not None else "then"
            text += f"; {when} the leader {old.node} (term {old.term}) was deposed"
            if new is not None:
                text += (f" and won again in term {new.term}" if new.node == old.node
                         else f" and {new.node} took over in term {new.term}")
    return text + ": "


def _stuck_nodes(history: Sequence[Op], end: int) -> list[dict[str, Any]]:
    """Nodes that are up and answering, with no fault active, yet never catch up with a majority
    (what a majority applied is committed): the replica a leader believes it already replicated to
    (drop-unconnected's signature). Two such nodes must not vouch for each other, so the bar is a
    majority ahead, not every other node. A node that is only slow catches up within a second of
    being restarted or reconnected."""
    quiet = quiet_stretches(history, end)
    by_node: dict[str, list[tuple[int, int | None]]] = {}
    index_at: dict[tuple[str, int], int] = {}
    for op in history:
        if op.process != "observer" or op.node is None:
            continue
        v = op.value if isinstance(op.value, dict) else {}
        applied = v.get("applied") if op.type == OK else None
        ok_int = isinstance(applied, int) and not isinstance(applied, bool)
        by_node.setdefault(str(op.node), []).append((op.time, applied if ok_int else None))
        index_at[(str(op.node), op.time)] = op.index
    found: list[dict[str, Any]] = []
    window = int(STUCK_S * S)
    for a, b in quiet:
        if b - a < window:
            continue
        for node, xs in by_node.items():
            mine = [(t, ap) for t, ap in xs if a <= t <= b]
            for i, (t0, _ap0) in enumerate(mine):
                w = window
                span = [x for x in mine[i:] if x[0] <= t0 + w]
                if mine[-1][0] < t0 + w or any(ap is None for _, ap in span):
                    continue
                last = max(ap for _, ap in span if ap is not None)
                others = [next((ap for t, ap in ys if t >= t0 and ap is not None), None)
                          for n2, ys in by_node.items() if n2 != node]
                ahead = [o for o in others if o is not None and o > last]
                if len(ahead) < majority(len(by_node)):
                    continue
                found.append({
                    "f": "status", "key": node, "attempts": len(span), "ops": [index_at[(node, t0)]],
                    "explanation": (f"{node} answered for {w / S:g} s with no fault active but stayed at "
                                    f"applied index {last} while a majority of the cluster had already "
                                    f"applied {min(ahead)}: it stopped receiving the log (unavailable for "
                                    f"reads)"),
                })
                break
    seen: set[str] = set()
    return [f for f in found if not (f["key"] in seen or seen.add(f["key"]))]


def _longest_outage(start: int, end: int, ok_times: list[int], attempts: list[int]) -> dict[str, Any]:
    """The longest stretch with no success, measured from the first attempt after a success (or the
    run's start) to the next success: idle time between phases is not an outage."""
    edges = [start, *ok_times, end]
    best = (0, start, start)
    for a, b in itertools.pairwise(edges):
        if b - a <= best[0]:
            continue
        i = bisect.bisect_left(attempts, a) if a == start else bisect.bisect_right(attempts, a)
        if i < len(attempts) and attempts[i] < b and b - attempts[i] > best[0]:
            best = (b - attempts[i], attempts[i], b)
    return {"ms": _ms(best[0]), "from_ms": _ms(best[1] - start), "to_ms": _ms(best[2] - start)}
