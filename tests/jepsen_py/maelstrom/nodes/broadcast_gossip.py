"""A broadcast node for the demo tests: each message is gossiped by the node a client gave it to,
straight to every other node. `--once` sends that gossip once and forgets it (a partition loses
it: the bug); with `--retry` (or no flag) the gossip is resent every 0.2 s until the peer
acknowledges it."""

import json
import os
import select
import sys
import time

ONCE = "--once" in sys.argv[1:]
RESEND_S = 0.2

me = ""
others: list[str] = []
messages: set[int] = set()
unacked: dict[int, tuple[str, dict, float]] = {}  # our msg_id -> (peer, body, when last sent)
next_id = 0


def send(dest: str, body: dict) -> None:
    sys.stdout.write(json.dumps({"src": me, "dest": dest, "body": body}) + "\n")
    sys.stdout.flush()


def gossip(message: int) -> None:
    global next_id
    for peer in others:
        next_id += 1
        body = {"type": "gossip", "message": message, "msg_id": next_id}
        send(peer, body)
        if not ONCE:
            unacked[next_id] = (peer, body, time.monotonic())


def handle(msg: dict) -> None:
    global me, others
    body = msg["body"]
    kind = body["type"]
    reply: dict = {"in_reply_to": body.get("msg_id")}
    if kind == "init":
        me = body["node_id"]
        others = [n for n in body["node_ids"] if n != me]
        reply["type"] = "init_ok"
    elif kind == "topology":
        reply["type"] = "topology_ok"
    elif kind == "broadcast":
        if body["message"] not in messages:
            messages.add(body["message"])
            gossip(body["message"])
        reply["type"] = "broadcast_ok"
    elif kind == "read":
        reply.update(type="read_ok", messages=sorted(messages))
    elif kind == "gossip":
        messages.add(body["message"])
        reply["type"] = "gossip_ok"
    elif kind == "gossip_ok":
        unacked.pop(body["in_reply_to"], None)
        return
    else:
        return
    send(msg["src"], reply)


def resend() -> None:
    now = time.monotonic()
    for peer, body, sent in list(unacked.values()):
        if now - sent >= RESEND_S:
            send(peer, body)
            unacked[body["msg_id"]] = (peer, body, now)


def main() -> None:
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], RESEND_S / 2)
        if ready:
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    handle(json.loads(line))
        resend()


main()
