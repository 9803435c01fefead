"""A g-set node for the demo tests. `--once` (the bug): an added element is sent to every other node
once, the moment it is added, and never again, so an element whose message a partition dropped
never reaches that node. With `--periodic` (or no flag) every node sends its whole set to every
other node every 0.1 s, and a receiver keeps the union: once a partition heals, all converge."""

import json
import os
import select
import sys
import time

ONCE = "--once" in sys.argv[1:]
GOSSIP_S = 0.1

me = ""
others: list[str] = []
elements: set = set()


def send(dest: str, body: dict) -> None:
    sys.stdout.write(json.dumps({"src": me, "dest": dest, "body": body}) + "\n")
    sys.stdout.flush()


def handle(msg: dict) -> None:
    global me, others
    body = msg["body"]
    kind = body["type"]
    reply: dict = {"in_reply_to": body.get("msg_id")}
    if kind == "init":
        me = body["node_id"]
        others = [n for n in body["node_ids"] if n != me]
        reply["type"] = "init_ok"
    elif kind == "add":
        elements.add(body["element"])
        if ONCE:  # fire and forget: nothing resends what a partition dropped
            for peer in others:
                send(peer, {"type": "gossip", "elements": [body["element"]]})
        reply["type"] = "add_ok"
    elif kind == "read":
        reply.update(type="read_ok", value=sorted(elements))
    elif kind == "gossip":
        elements.update(body["elements"])
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
        if not ONCE and me and time.monotonic() - last >= GOSSIP_S:
            last = time.monotonic()
            for peer in others:
                send(peer, {"type": "gossip", "elements": sorted(elements)})


main()
