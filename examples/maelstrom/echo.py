#!/usr/bin/env python3
"""A Maelstrom node in plain Python: answers `init` and `echo`, one JSON message a line.

The smallest node `jepsen-py maelstrom --workload echo` passes; any program in any language that
reads messages on stdin and writes them on stdout the same way runs in its place.
"""

import json
import sys


def main() -> None:
    node_id = None
    for msg_id, line in enumerate(sys.stdin, start=1):
        msg = json.loads(line)
        body = msg["body"]
        if body["type"] == "init":
            node_id = body["node_id"]
            reply = {"type": "init_ok"}
        elif body["type"] == "echo":
            reply = {"type": "echo_ok", "echo": body["echo"]}
        else:
            reply = {"type": "error", "code": 10, "text": f"{node_id} does not do {body['type']}"}
        reply.update(msg_id=msg_id, in_reply_to=body.get("msg_id"))
        print(json.dumps({"src": node_id or msg["dest"], "dest": msg["src"], "body": reply}), flush=True)


if __name__ == "__main__":
    main()
