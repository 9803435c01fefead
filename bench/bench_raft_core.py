"""Benchmark: the pure Raft core alone, 3 (or 5) RawNodes in one process, no disk, no sockets.

Shows what the consensus core costs per operation, so the node's throughput (bench_cluster.py) can be
judged against it: proposals committed and applied on every node per second, linearizable ReadIndex
reads per second, and election time in ticks over many seeds.

    python3 bench/bench_raft_core.py [--nodes 3] [--proposals 20000] [--batch 32] [--reads 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jepsen_py.cluster.raft import LEADER, Config, MemoryStorage, Message, RawNode


class Bench:
    def __init__(self, n: int, config: Config) -> None:
        self.ids = [f"n{i + 1}" for i in range(n)]
        self.storage = {i: MemoryStorage(self.ids) for i in self.ids}
        self.nodes = {i: RawNode(i, self.ids, self.storage[i], config) for i in self.ids}
        self.net: list[Message] = []
        self.applied = dict.fromkeys(self.ids, 0)
        self.reads = 0

    def pump(self) -> None:
        while True:
            busy = False
            for i, raw in self.nodes.items():
                while raw.has_ready():
                    busy = True
                    rd = raw.ready()
                    st = self.storage[i]
                    if rd.snapshot is not None:
                        st.apply_snapshot(rd.snapshot)
                    st.append(rd.entries)
                    if rd.hard_state is not None:
                        st.set_hard_state(rd.hard_state)
                    self.net.extend(rd.messages)
                    if rd.committed_entries:
                        self.applied[i] = rd.committed_entries[-1].index
                    self.reads += len(rd.read_states)
                    raw.advance(rd)
            if not self.net:
                if not busy:
                    return
                continue
            msgs, self.net = self.net, []
            for m in msgs:
                self.nodes[m.dst].step(m)

    def tick(self) -> None:
        for raw in self.nodes.values():
            raw.tick()
        self.pump()

    def leader(self) -> RawNode | None:
        leaders = [r for r in self.nodes.values() if r.raft.state == LEADER]
        return leaders[0] if len(leaders) == 1 else None


def elect(n: int, seed: int) -> tuple[Bench, int]:
    b = Bench(n, Config(election_tick=10, seed=seed))
    for t in range(1, 1000):
        b.tick()
        lead = b.leader()
        if lead is not None and all(r.raft.lead == lead.id for r in b.nodes.values()):
            return b, t
    raise RuntimeError("no leader")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--proposals", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=32, help="proposals handed in per Ready cycle")
    ap.add_argument("--reads", type=int, default=20000)
    ap.add_argument("--seeds", type=int, default=200)
    args = ap.parse_args()

    ticks = [elect(args.nodes, s)[1] for s in range(args.seeds)]
    print(f"election from cold start, {args.nodes} nodes, election_tick=10, {args.seeds} seeds: "
          f"median {statistics.median(ticks)} ticks, max {max(ticks)} ticks "
          f"({max(ticks) / 10:.1f} election timeouts)")

    b, _ = elect(args.nodes, 1)
    lead = b.leader()
    assert lead is not None
    start_index = b.applied[lead.id]
    t0 = time.perf_counter()
    done = 0
    while done < args.proposals:
        k = min(args.batch, args.proposals - done)
        for j in range(k):
            lead.propose({"op": "commit", "group": "g", "offset": done + j})
        done += k
        b.pump()
    elapsed = time.perf_counter() - t0
    want = start_index + args.proposals
    assert all(a >= want for a in b.applied.values()), b.applied
    rate = args.proposals / elapsed
    print(f"proposals committed and applied on all {args.nodes} nodes: {rate:,.0f}/s "
          f"({elapsed * 1e6 / args.proposals:.1f} us each, batch {args.batch}); "
          f"ratio to the node target of 2,000/s: {rate / 2000:.1f}x")

    t0 = time.perf_counter()
    before = b.reads
    done = 0
    while done < args.reads:
        k = min(args.batch, args.reads - done)
        for j in range(k):
            lead.read_index(f"r{done + j}")
        done += k
        b.pump()
    elapsed = time.perf_counter() - t0
    assert b.reads - before == args.reads
    print(f"ReadIndex reads confirmed: {args.reads / elapsed:,.0f}/s "
          f"(one heartbeat round releases every read queued before it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
