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
    # A client that goes quiet (its packets dropped by a partition) frees the server after this long.
    timeout = 2.0

    def handle(self) -> None:
        try:
            for _line in self.rfile:
                answer = {"node": node, "time": time.time(), "mono": time.monotonic(), "boots": boots,
                          "pid": os.getpid()}
                self.wfile.write((json.dumps(answer) + "\n").encode())
        except OSError:  # a timeout or a reset: the next client is served
            pass


class Server(socketserver.TCPServer):
    """One thread: libfaketime re-reads its timestamp file on every clock call into state all threads
    share, so a process reading clocks on two threads at once now and then gets the real time instead
    of the faked one (measured: about 1 answer in 100 when each answer had a thread of its own beside
    the serving loop). The raft node reads its clocks on its event loop's thread."""

    allow_reuse_address = True


print(f"probe {node} listening on {port}, boot {boots}", flush=True)
Server(("0.0.0.0", port), Handler).serve_forever()
