"""Benchmark: messages per second the Maelstrom router (jepsen_py/maelstrom/router.py) forwards between
node processes that do nothing but forward.

`--nodes` tiny Python nodes (written below) pass tokens round a ring: a node that gets
`{"type": "fwd", "hops": h}` sends it on to the next node with h - 1, and the node that takes it to 0
answers the client. `--tokens` calls are in flight at once, each `--hops` hops long, so the client's
share is small and what is measured is node -> router -> node. Printed: server-to-server messages
delivered per wall second, and the CPU seconds of this process (the router) and of the nodes.

    python3 bench/bench_maelstrom_router.py [--nodes 25] [--tokens 50] [--hops 2000] [--latency-ms 0]
        [--journal N]  # keep the router's message journal (the first N messages), as a run does
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jepsen_py.maelstrom.journal import MessageJournal
from jepsen_py.maelstrom.router import Latency, Router

#: The forwarding node: reads whatever stdin has, answers every message in it, writes once.
FORWARDER = r"""
import json, os, sys

me, ring, out = None, [], sys.stdout.buffer
rest = b""
while True:
    chunk = os.read(0, 1 << 16)
    if not chunk:
        break
    lines = (rest + chunk).split(b"\n")
    rest = lines.pop()
    sends = []
    for line in lines:
        msg = json.loads(line)
        body = msg["body"]
        if body["type"] == "init":
            me, ring = body["node_id"], body["node_ids"]
            reply = {"type": "init_ok", "in_reply_to": body["msg_id"]}
            sends.append({"src": me, "dest": msg["src"], "body": reply})
        elif body["hops"] == 0:
            reply = {"type": "fwd_ok", "in_reply_to": body["call"]}
            sends.append({"src": me, "dest": body["client"], "body": reply})
        else:
            if "client" not in body:  # the first hop, straight from the client
                body = {"type": "fwd", "hops": body["hops"], "client": msg["src"], "call": body["msg_id"]}
            body["hops"] -= 1
            nxt = ring[(ring.index(me) + 1) % len(ring)]
            sends.append({"src": me, "dest": nxt, "body": body})
    if sends:
        out.write(b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in sends))
        out.flush()
"""


def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        node = Path(tmp) / "forwarder.py"
        node.write_text(FORWARDER)
        latency = Latency(args.latency_ms, "constant")
        journal = MessageJournal(args.journal) if args.journal else None
        with Router([sys.executable, str(node)], args.nodes, Path(tmp) / "logs", latency=latency,
                    journal=journal) as r:
            r.start(init_timeout=30)
            before = r.stats().servers.delivered
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            started = time.monotonic()
            outcomes: list[str] = []

            def one(i: int) -> None:
                result = r.call(f"c{i + 1}", "n1", {"type": "fwd", "hops": args.hops}, args.timeout)
                outcomes.append(result.outcome)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(args.tokens)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.monotonic() - started
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            forwarded = r.stats().servers.delivered - before
            problems = list(r.problems)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    router_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    print(f"{args.nodes} nodes, {args.tokens} tokens x {args.hops} hops, latency {args.latency_ms:g} ms, "
          f"{os.cpu_count()} cores{f', journal of {args.journal}' if args.journal else ''}")
    print(f"  {forwarded} node-to-node messages in {wall:.2f} s: {forwarded / wall:,.0f} msgs/s "
          f"({outcomes.count('ok')}/{args.tokens} tokens home)")
    print(f"  router CPU {router_cpu:.2f} s ({router_cpu / wall:.0%} of a core), "
          f"{forwarded / router_cpu:,.0f} msgs per router CPU second; "
          f"nodes' CPU {kids.ru_utime + kids.ru_stime:.2f} s over their whole run")
    if problems:
        print(f"  {len(problems)} protocol problems, first: {problems[0]}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--nodes", type=int, default=25)
    p.add_argument("--tokens", type=int, default=50)
    p.add_argument("--hops", type=int, default=2000)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--journal", type=int, default=0, help="journal the first N messages (0: no journal)")
    run(p.parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
