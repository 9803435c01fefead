"""A lin-kv node for the demo tests: n1 holds the store. `--local-reads` (the bug): writes and
cas go to n1, which applies them, answers, and sends each new value to the other nodes once; every
node answers reads from its own copy, stale whenever a copy was lost or is still on its way.
With `--forward` (or no flag) every op is forwarded to n1, which alone answers; a forwarded op
with no answer within 0.5 s is answered with error 0 (timeout: indefinite, the op may have
happened)."""

import json
import os
import select
import sys
import time

LOCAL_READS = "--local-reads" in sys.argv[1:]
PRIMARY = "n1"
GIVE_UP_S = 0.5

me = ""
others: list[str] = []
store: dict = {}
waiting: dict[int, tuple[dict, float]] = {}  # our msg_id -> (the client's message, when forwarded)
next_id = 0


def send(dest: str, body: dict) -> None:
    sys.stdout.write(json.dumps({"src": me, "dest": dest, "body": body}) + "\n")
    sys.stdout.flush()


def apply(body: dict) -> dict:
    """The primary's answer to read, write or cas (without in_reply_to)."""
    key = body["key"]
    if body["type"] == "read":
        if key not in store:
            return {"type": "error", "code": 20, "text": "no such key"}
        return {"type": "read_ok", "value": store[key]}
    if body["type"] == "write":
        store[key] = body["value"]
    elif key not in store:
        return {"type": "error", "code": 20, "text": "no such key"}
    elif store[key] != body["from"]:
        return {"type": "error", "code": 22, "text": f"expected {body['from']}, had {store[key]}"}
    else:
        store[key] = body["to"]
    for peer in others:  # fire and forget: nothing resends a copy a partition dropped
        send(peer, {"type": "replicate", "key": key, "value": store[key]})
    return {"type": f"{body['type']}_ok"}


def handle(msg: dict) -> None:
    global me, others, next_id
    body = msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        others = [n for n in body["node_ids"] if n != me]
        send(msg["src"], {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "replicate":
        store[body["key"]] = body["value"]
    elif kind == "forwarded":
        answer = apply(body["op"]) if me == PRIMARY else {"type": "error", "code": 11}
        send(msg["src"], {**answer, "in_reply_to": body["msg_id"]})
    elif "in_reply_to" in body:  # the primary's answer to an op we forwarded
        entry = waiting.pop(body["in_reply_to"], None)
        if entry is not None:
            client = entry[0]
            send(client["src"], {**body, "in_reply_to": client["body"]["msg_id"]})
    elif kind in ("read", "write", "cas"):
        if me == PRIMARY:
            send(msg["src"], {**apply(body), "in_reply_to": body["msg_id"]})
        elif kind == "read" and LOCAL_READS:
            answer = apply(body) if body["key"] in store else {"type": "error", "code": 20}
            send(msg["src"], {**answer, "in_reply_to": body["msg_id"]})
        else:
            next_id += 1
            waiting[next_id] = (msg, time.monotonic())
            send(PRIMARY, {"type": "forwarded", "op": body, "msg_id": next_id})


def give_up() -> None:
    now = time.monotonic()
    for msg_id, (client, since) in list(waiting.items()):
        if now - since >= GIVE_UP_S:
            del waiting[msg_id]
            send(client["src"], {"type": "error", "code": 0, "text": "primary did not answer",
                                 "in_reply_to": client["body"]["msg_id"]})


def main() -> None:
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], 0.05)
        if ready:
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    handle(json.loads(line))
        give_up()


main()
