"""Benchmark of exact isolation checking (checkers/elle/exact.py). Prints figures.

    python bench/bench_exact.py --sim list-append --seconds 100        # our cluster, in the simulator
    python bench/bench_exact.py --history results/latest/history.jsonl --workload rw-register
    python bench/bench_exact.py --miss-rate 10000                       # Elle-style vs the oracle
    python bench/bench_exact.py --solvers 3000      # CaDiCaL vs z3 (needs: pip install z3-solver)

A history (from a simulated run of our cluster with --sim, or any stored one) is decided under
serializable, strict-serializable and snapshot-isolation; for each the time, the choices the
polygraph had before and after pruning, the solver's rounds, and the verdict. --miss-rate draws
that many small histories per workload from the toy database of tests/checkers/elle/executions.py
(four isolation levels, six kinds of damage), decides each with the brute-force oracle, and
counts how often the Elle-style checker misses a violation (it is never unsound) and whether the
exact checker ever disagrees with the oracle. --solvers N decides rw-register histories of N
transactions from the toy database's snapshot-isolation engines, with and without first
committer wins (few keys: many writes no read orders, so the solver has work) with CaDiCaL
(python-sat, what exact.py uses) and with z3, the other solver the papers use, and prints the time
in the solver and in all.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jepsen_py.checkers.elle import check
from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.exact import MODELS, decide
from jepsen_py.checkers.elle.txn import APPEND, WRITE, transactions

from jepsen_py.errors import BadInput
from jepsen_py.history import read_history

WRITE_F = {"list-append": APPEND, "rw-register": WRITE}


def sim_history(workload: str, seconds: float, seed: int, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--backend", "sim", "--workload", workload,
                    "--nemesis", "partition-leader", "--time-limit", str(seconds), "--seed", str(seed),
                    "--results-dir", str(out), "--no-progress"], check=False, capture_output=True)
    return out / "latest" / "history.jsonl"


def decide_history(path: Path, workload: str, budget: float) -> None:
    ops = read_history(path)
    txns = transactions(ops, WRITE_F[workload])
    oks = sum(t.type == "ok" for t in txns)
    print(f"{path}: {workload}, {len(txns):,} transactions ({oks:,} ok)")
    for model in MODELS:
        t0 = time.perf_counter()
        elle = check(ops, workload, [model], time_s=budget)["valid"]
        print(f"  {model:20} Elle-style {elle!s:8} {time.perf_counter() - t0:8.2f} s")
        t0 = time.perf_counter()
        d = decide(txns, workload, model, Deadline(budget))
        dt = time.perf_counter() - t0
        s = d.stats
        print(f"  {model:20} exact      {d.valid!s:8} {dt:8.2f} s  choices {s.get('choices', '-')} -> "
              f"{s.get('choices_after_pruning', '-')}, rounds {s.get('rounds', '-')}"
              + (f" (as {s['by']})" if s.get("by") else "") + (f"  [{d.reason}]" if d.reason else ""))


def miss_rate(n: int, seed: int) -> None:
    from tests.checkers.elle import oracle
    from tests.checkers.elle.executions import ENGINES, MUTATIONS, execute, mutate

    rng = random.Random(seed)
    t0 = time.perf_counter()
    for workload in ("list-append", "rw-register"):
        seen: Counter[str] = Counter()
        for _ in range(n):
            r = random.Random(rng.randrange(1 << 62))
            ops = execute(r, r.randint(2, 7), r.randint(1, 3), workload, r.choice(ENGINES))
            for how in r.sample(MUTATIONS, r.randint(0, 2)):
                ops = mutate(r, ops, workload, how)
            try:
                txns = transactions(ops, WRITE_F[workload])
                check(ops, workload, ["serializable"])
            except BadInput:
                seen["refused"] += 1
                continue
            for model in MODELS:
                want = oracle.decide(txns, workload, model)
                seen[f"{model} invalid" if want is False else f"{model} valid"] += 1
                if decide(txns, workload, model, Deadline(60)).valid is not want:
                    seen[f"{model} exact disagrees"] += 1
                elle = check(ops, workload, [model])["valid"]
                if elle is False and want is not False:
                    seen[f"{model} Elle-style unsound"] += 1
                if elle is not False and want is False:
                    seen[f"{model} Elle-style missed"] += 1
        print(f"{workload}: {n:,} histories ({seen['refused']} refused as input)")
        for model in MODELS:
            bad = seen[f"{model} invalid"]
            missed = seen[f"{model} Elle-style missed"]
            print(f"  {model:20} invalid {bad:5,}  Elle-style missed {missed:4} ({missed / max(bad, 1):.2%}),"
                  f" unsound {seen[f'{model} Elle-style unsound']}, exact disagrees "
                  f"{seen[f'{model} exact disagrees']}")
    print(f"({time.perf_counter() - t0:.0f} s)")


class Z3Solver:
    """z3's solver behind the calls exact.py makes of python-sat's (no phase hints: z3 takes none
    per variable)."""

    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.s = z3.SolverFor("QF_FD")
        self.vars: dict[int, Any] = {}

    def __enter__(self) -> Z3Solver:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _var(self, v: int) -> Any:
        if v not in self.vars:
            self.vars[v] = self.z3.Bool(f"x{v}")
        return self.vars[v]

    def set_phases(self, lits: list[int]) -> None:
        for lit in lits:
            self._var(abs(lit))

    def add_clause(self, lits: list[int]) -> None:
        self.s.add(self.z3.Or([self._var(abs(x)) if x > 0 else self.z3.Not(self._var(abs(x))) for x in lits]))

    def solve(self) -> bool:
        return self.s.check() == self.z3.sat

    def get_model(self) -> list[int]:
        m = self.s.model()
        return [v if self.z3.is_true(m.eval(b, model_completion=True)) else -v for v, b in self.vars.items()]


def solvers(n: int, seed: int, budget: float) -> None:
    from jepsen_py.checkers.elle import exact

    from tests.checkers.elle.executions import execute

    cadical = exact.new_solver
    rng = random.Random(seed)
    for engine in ("si", "no-fcw"):
        for keys in (2, 5):
            ops = execute(random.Random(rng.randrange(1 << 62)), n, keys, "rw-register", engine, procs=10)
            txns = transactions(ops, WRITE)
            print(f"rw-register, {len(txns):,} transactions on {keys} keys, engine {engine}")
            for model in MODELS:
                for name, make in (("CaDiCaL", cadical), ("z3", Z3Solver)):
                    exact.new_solver = make
                    t0 = time.perf_counter()
                    d = decide(txns, "rw-register", model, Deadline(budget))
                    dt = time.perf_counter() - t0
                    st = d.stats
                    print(f"  {model:20} {name:8} {d.valid!s:8} {dt:7.2f} s, in the solver "
                          f"{st.get('solver_s', 0.0):6.2f} s; choices {st.get('choices', '-')} -> "
                          f"{st.get('choices_after_pruning', '-')}, rounds {st.get('rounds', '-')}, "
                          f"clauses {st.get('clauses', '-')}" + (f" (as {st['by']})" if st.get("by") else ""))
            exact.new_solver = cadical


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", choices=sorted(WRITE_F))
    ap.add_argument("--seconds", type=float, default=100.0, help="simulated seconds of the run (--sim)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--history", type=Path)
    ap.add_argument("--workload", choices=sorted(WRITE_F), default="list-append")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per model")
    ap.add_argument("--miss-rate", type=int, default=0, metavar="N")
    ap.add_argument("--solvers", type=int, default=0, metavar="N")
    a = ap.parse_args()
    if a.solvers:
        solvers(a.solvers, a.seed, a.budget)
    if a.miss_rate:
        miss_rate(a.miss_rate, a.seed)
    if a.sim:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            path = sim_history(a.sim, a.seconds, a.seed, Path(tmp))
            print(f"(simulated run of {a.seconds:g} s in {time.perf_counter() - t0:.0f} s)")
            decide_history(path, a.sim, a.budget)
    if a.history:
        decide_history(a.history, a.workload, a.budget)


if __name__ == "__main__":
    main()
