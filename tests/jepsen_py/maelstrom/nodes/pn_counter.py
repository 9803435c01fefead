"""A pn-counter node for the demo tests: every node sends its counts to every other node every
0.1 s, and a receiver keeps, for each node, the larger of its count and the one received.
`--net-max` (the bug): one count per node, the net sum of the deltas that node was given, merged
like a g-counter's by max. But a net count also goes down, and then the max keeps an older, larger
one: the decrement is lost everywhere (on the node given it too, once a peer sends back its older
count). With `--pn` (or no flag), a PN-counter: per node, the sum P of its positive deltas and the
sum N of its negative ones (as a positive number), both only ever growing, so the larger is the
newer; the value is sum(P) - sum(N)."""

import json
import os
import select
import sys
import time

NET_MAX = "--net-max" in sys.argv[1:]
GOSSIP_S = 0.1

me = ""
others: list[str] = []
p: dict[str, int] = {}  # node -> the sum of its positive deltas (with --net-max: its net sum)
n: dict[str, int] = {}  # node -> minus the sum of its negative deltas (unused with --net-max)


def send(dest: str, body: dict) -> None:
    sys.stdout.write(json.dumps({"src": me, "dest": dest, "body": body}) + "\n")
    sys.stdout.flush()


def merge(mine: dict[str, int], theirs: dict[str, int]) -> None:
    for node, count in theirs.items():
        mine[node] = max(mine.get(node, count), count)


def handle(msg: dict) -> None:
    global me, others
    body = msg["body"]
    kind = body["type"]
    reply: dict = {"in_reply_to": body.get("msg_id")}
    if kind == "init":
        me = body["node_id"]
        others = [x for x in body["node_ids"] if x != me]
        reply["type"] = "init_ok"
    elif kind == "add":
        delta = body["delta"]
        if NET_MAX or delta >= 0:
            p[me] = p.get(me, 0) + delta
        else:
            n[me] = n.get(me, 0) - delta
        reply["type"] = "add_ok"
    elif kind == "read":
        reply.update(type="read_ok", value=sum(p.values()) - sum(n.values()))
    elif kind == "gossip":
        merge(p, body["p"])
        merge(n, body["n"])
        return
    else:
        return
    send(msg["src"], reply)


def main() -> None:
    pending = b""
    last = time.monotonic()
    while True:
        ready, _, _ = select.select([0], [], [], GOSSIP_S / 2)
        if ready:
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    handle(json.loads(line))
        if me and time.monotonic() - last >= GOSSIP_S:
            last = time.monotonic()
            for peer in others:
                send(peer, {"type": "gossip", "p": p, "n": n})


main()
