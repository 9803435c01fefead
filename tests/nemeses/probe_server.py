"""A small real server the nemesis tests run on the nodes (standard library only).

Each line a client sends gets one JSON line back: the node's name, its time.time() and
time.monotonic() (both as libfaketime shows them), and how many times the server has booted from its
data directory, which a restart after SIGKILL must increment rather than reset.
"""

import json
import os
import socketserver
import sys
import time

node, port, data_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(data_dir, exist_ok=True)
boots_file = os.path.join(data_dir, "boots")
boots = 1
if os.path.exists(boots_file):
    with open(boots_file) as f:
        boots = int(f.read()) + 1
with open(boots_file + ".tmp", "w") as f:
    f.write(str(boots))
    f.flush()
    os.fsync(f.fileno())
os.rename(boots_file + ".tmp", boots_file)


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for _line in self.rfile:
            answer = {"node": node, "time": time.time(), "mono": time.monotonic(), "boots": boots,
                      "pid": os.getpid()}
            self.wfile.write((json.dumps(answer) + "\n").encode())


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


print(f"probe {node} listening on {port}, boot {boots}", flush=True)
Server(("0.0.0.0", port), Handler).serve_forever()
