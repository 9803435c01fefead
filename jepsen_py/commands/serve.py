"""`jepsen-py serve`: browse results/ in a web browser (Jepsen's `lein run serve`)."""

from __future__ import annotations

import argparse
import sys

from jepsen_py.errors import BadInput
from jepsen_py.flags import path_text
from jepsen_py.numbers import MAX_SECONDS, integer, number
from jepsen_py.web import IDLE_TIMEOUT_S, MAX_CONNECTIONS, make_server, server_url

NAME = "serve"
HELP = "serve a web UI over the results directory: every run, newest first, with its pictures and files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=integer(0, 65535), default=8080,
                        help="TCP port (default 8080; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: only this machine can connect)")
    parser.add_argument("--results-dir", type=path_text, default="results",
                        help="the results directory (default results/)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="also answer requests for this host name (repeatable); by default only "
                             "127.0.0.1, localhost and --host are answered, which stops other web "
                             "sites from reading results through DNS rebinding")
    parser.add_argument("--request-timeout", type=number(0, MAX_SECONDS, lo_open=True), default=None,
                        metavar="S", help="seconds a whole request may take to arrive; a connection "
                                          "idle or trickling longer is closed (default 20)")
    parser.add_argument("--max-connections", type=integer(1, 10000), default=None, metavar="N",
                        help="connections served at once; more are answered 503 (default 64)")


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise BadInput(f"--port {args.port}: not a TCP port (0-65535)")
    server = make_server(args.results_dir, args.host, args.port, allow_hosts=tuple(args.allow_host),
                         idle_timeout=args.request_timeout or IDLE_TIMEOUT_S,
                         max_connections=args.max_connections or MAX_CONNECTIONS)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"jepsen-py: warning: serving {args.results_dir} to the network on {args.host}",
              file=sys.stderr)
    print(f"serving {args.results_dir} at {server_url(server)} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
