"""Benchmark: 3 local node processes (fsync on), 32 concurrent clients.

Prints acknowledged offset commits/s with p50/p99 latency, then linearizable (ReadIndex) fetches/s
with p50/p99, and the ratio to the targets (>= 2,000 commits/s, p99 < 50 ms on 2 cores).

    python3 bench/bench_cluster.py [--clients 32] [--seconds 10] [--nodes 3] [--target leader|all]

The load generator is one asyncio loop speaking the client protocol directly (the same frames as
jepsen_py.cluster.client.ClusterClient), so 32 clients cost the benchmark process little CPU. Every request is
bounded in time and the run stops by itself; all traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jepsen_py.cluster.framing import MAX_PEER_FRAME, encode, read_frame

from jepsen_py.raftdb.local import HOST, LocalCluster


async def worker(port: int, make_req, seconds: float, lat: list[float], errors: dict[str, int], wid: int):
    reader, writer = await asyncio.open_connection(HOST, port)
    deadline = time.monotonic() + seconds
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            req = make_req(wid, i)
            req["id"] = i
            t0 = time.perf_counter()
            writer.write(encode(req))
            try:
                resp = await asyncio.wait_for(read_frame(reader, MAX_PEER_FRAME), 5.0)
            except TimeoutError:
                errors["client-timeout"] = errors.get("client-timeout", 0) + 1
                break
            if resp is None:
                errors["closed"] = errors.get("closed", 0) + 1
                break
            if resp.get("ok"):
                lat.append(time.perf_counter() - t0)
            else:
                errors[resp.get("error", "?")] = errors.get(resp.get("error", "?"), 0) + 1
    finally:
        writer.close()


async def phase(ports: list[int], clients: int, seconds: float, make_req) -> tuple[list[float], dict, float]:
    lat: list[float] = []
    errors: dict[str, int] = {}
    t0 = time.monotonic()
    await asyncio.gather(*(worker(ports[w % len(ports)], make_req, seconds, lat, errors, w)
                           for w in range(clients)))
    return lat, errors, time.monotonic() - t0


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the node processes so far (from /proc: a load-independent cost)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000


def report(name: str, lat: list[float], errors: dict, elapsed: float) -> float:
    rate = len(lat) / elapsed
    print(f"{name}: {len(lat)} acknowledged in {elapsed:.1f}s = {rate:,.0f}/s; "
          f"latency p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f} ms, "
          f"mean {1000 * statistics.fmean(lat) if lat else float('nan'):.1f} ms; errors {errors or 'none'}")
    return rate


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--target", choices=["leader", "all"], default="leader",
                    help="send to the leader only, or spread clients over every node (followers forward)")
    ap.add_argument("--no-fsync", action="store_true", help="UNSAFE mode, for comparison only")
    args = ap.parse_args()
    extra = ["--no-fsync"] if args.no_fsync else []
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as d, \
            LocalCluster(args.nodes, d, extra_args=extra) as c:
        c.start_all()
        leader = c.wait_for_leader(20)
        nodes = [leader] if args.target == "leader" else list(c.nodes)
        ports = [c.nodes[n].client_port for n in nodes]
        fsync = "off" if args.no_fsync else "on"
        print(f"cluster: {args.nodes} nodes on {HOST}, leader {leader}, fsync {fsync}, "
              f"{args.clients} clients -> {args.target}, {os.cpu_count()} cores")

        def commit(wid: int, i: int) -> dict:
            return {"op": "commit_offset", "group": f"g{wid % 4}", "topic": "orders",
                    "partition": wid, "offset": i, "timeout_ms": 4000}

        def fetch(wid: int, i: int) -> dict:
            return {"op": "fetch_offset", "group": f"g{wid % 4}", "topic": "orders",
                    "partition": wid, "timeout_ms": 4000}

        pids = [n.proc.pid for n in c.nodes.values() if n.proc is not None]
        cpu0 = cpu_seconds(pids)
        lat, errs, el = asyncio.run(phase(ports, args.clients, args.seconds, commit))
        cpu1 = cpu_seconds(pids)
        commits = report("offset commits", lat, errs, el)
        p99 = pct(lat, 99)
        lat_r, errs_r, el_r = asyncio.run(phase(ports, args.clients, args.seconds, fetch))
        cpu2 = cpu_seconds(pids)
        reads = report("linearizable fetches (ReadIndex)", lat_r, errs_r, el_r)
        print(f"node CPU (all {len(pids)} processes): {1000 * (cpu1 - cpu0) / max(1, len(lat)):.2f} ms per "
              f"commit, {1000 * (cpu2 - cpu1) / max(1, len(lat_r)):.2f} ms per read; "
              f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        st = c.status(leader, 2.0) or {}
        print(f"leader: {st.get('wal_syncs')} WAL fsyncs for {st.get('commit')} committed entries "
              f"({st.get('readies')} Ready batches)")
        print(f"ratio to target: commits {commits / 2000:.2f}x of 2,000/s; p99 {p99:.1f} ms vs 50 ms "
              f"({'ok' if p99 < 50 else 'over'}); reads {reads:,.0f}/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
