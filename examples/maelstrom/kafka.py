#!/usr/bin/env python3
"""A Maelstrom kafka node in plain Python: one JSON message a line on stdin and stdout.

    jepsen-py maelstrom --bin examples/maelstrom/kafka.py --workload kafka --node-count 2 --time-limit 10

Correct by the simplest design: one node keeps every log. The first node of init's node_ids (n1)
is the log keeper; every other node forwards each client request to it as an RPC of its own and
relays the keeper's reply to the client. The keeper gives each key's messages dense offsets 0, 1,
2, ... in arrival order, answers a poll with up to POLL_LIMIT messages per key from the offset
asked for, and only ever advances a committed offset (a commit below it changes nothing).

The logs live in the keeper's memory: a request the keeper never answers (a partition, a killed
keeper) times out at the client, which is allowed; a killed and restarted keeper forgets its logs,
which the checker reports as lost writes.
"""

import json
import sys

POLL_LIMIT = 100


class Node:
    def __init__(self) -> None:
        self.me = None
        self.node_ids: list[str] = []
        self.next_msg_id = 0
        self.logs: dict[str, list] = {}  # key -> messages, a message's offset is its index
        self.committed: dict[str, int] = {}
        self.forwarded: dict[int, tuple[str, int]] = {}  # our msg_id -> (client, its msg_id)

    def keeper(self) -> str:
        """The node holding every log."""
        return self.node_ids[0]

    def send(self, dest: str, body: dict) -> None:
        self.next_msg_id += 1
        body = {**body, "msg_id": self.next_msg_id}
        print(json.dumps({"src": self.me, "dest": dest, "body": body}), flush=True)

    def reply(self, msg: dict, body: dict) -> None:
        self.send(msg["src"], {**body, "in_reply_to": msg["body"].get("msg_id")})

    def handle(self, msg: dict) -> None:
        body = msg["body"]
        kind = body.get("type")
        if kind == "init":
            self.me = body["node_id"]
            self.node_ids = list(body["node_ids"])
            self.reply(msg, {"type": "init_ok"})
        elif "in_reply_to" in body:
            waiting = self.forwarded.pop(body["in_reply_to"], None)
            if waiting is not None:  # the keeper's answer to a request we forwarded
                client, client_msg_id = waiting
                answer = {k: v for k, v in body.items() if k not in ("msg_id", "in_reply_to")}
                self.send(client, {**answer, "in_reply_to": client_msg_id})
        elif kind in ("send", "poll", "commit_offsets", "list_committed_offsets"):
            if self.me == self.keeper():
                self.reply(msg, self.serve(body))
            else:
                self.next_msg_id += 1
                self.forwarded[self.next_msg_id] = (msg["src"], body.get("msg_id"))
                request = {k: v for k, v in body.items() if k != "msg_id"}
                print(json.dumps({"src": self.me, "dest": self.keeper(),
                                  "body": {**request, "msg_id": self.next_msg_id}}), flush=True)
        else:
            self.reply(msg, {"type": "error", "code": 10, "text": f"{self.me} does not do {kind}"})

    def serve(self, body: dict) -> dict:
        """The keeper's answer to one request."""
        kind = body["type"]
        if kind == "send":
            log = self.logs.setdefault(body["key"], [])
            log.append(body["msg"])
            return {"type": "send_ok", "offset": len(log) - 1}
        if kind == "poll":
            msgs = {}
            for key, start in body["offsets"].items():
                log = self.logs.get(key, [])
                start = max(0, start)
                if start < len(log):
                    msgs[key] = [[o, log[o]] for o in range(start, min(len(log), start + POLL_LIMIT))]
            return {"type": "poll_ok", "msgs": msgs}
        if kind == "commit_offsets":
            for key, offset in body["offsets"].items():
                self.committed[key] = max(offset, self.committed.get(key, offset))
            return {"type": "commit_offsets_ok"}
        return {"type": "list_committed_offsets_ok",
                "offsets": {k: self.committed[k] for k in body["keys"] if k in self.committed}}


def main() -> None:
    node = Node()
    for line in sys.stdin:
        if line.strip():
            node.handle(json.loads(line))


if __name__ == "__main__":
    main()
