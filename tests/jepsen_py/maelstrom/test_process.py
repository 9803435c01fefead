"""One node's process: its stdout lines become messages, anything else a problem naming it, its end
an exit report; kill, restart, pause and resume act on the real process."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from jepsen_py.maelstrom.process import Exit, NodeProcess, Problem
from jepsen_py.maelstrom.protocol import Message, encode, parse_line
from tests.jepsen_py.maelstrom.conftest import demo_argv, write_node


class Sink:
    """What a node hands back, with a wait for each kind."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.raw: list[bytes] = []
        self.problems: list[Problem] = []
        self.exits: list[Exit] = []
        self.cond = threading.Condition()

    def on_messages(self, batch: list[tuple[Message, bytes]]) -> None:
        with self.cond:
            for msg, raw in batch:
                self.messages.append(msg)
                self.raw.append(raw)
            self.cond.notify_all()

    def on_problem(self, problem: Problem) -> None:
        with self.cond:
            self.problems.append(problem)
            self.cond.notify_all()

    def on_exit(self, exit_: Exit) -> None:
        with self.cond:
            self.exits.append(exit_)
            self.cond.notify_all()

    def wait(self, what: str, count: int = 1, timeout: float = 5.0) -> list:
        with self.cond:
            self.cond.wait_for(lambda: len(getattr(self, what)) >= count, timeout)
            return list(getattr(self, what))


def node(tmp_path: Path, argv: list[str], sink: Sink, name: str = "n1") -> NodeProcess:
    return NodeProcess(name, argv, tmp_path / f"{name}.log", on_messages=sink.on_messages,
                       on_problem=sink.on_problem, on_exit=sink.on_exit)


def init(msg_id: int = 1) -> bytes:
    body = {"type": "init", "msg_id": msg_id, "node_id": "n1", "node_ids": ["n1"]}
    return encode(Message("c0", "n1", body))


def echo(msg_id: int) -> bytes:
    return encode(Message("c1", "n1", {"type": "echo", "msg_id": msg_id, "echo": msg_id}))


def test_a_demo_node_talks_through_its_pipes_and_logs_stderr(tmp_path):
    sink = Sink()
    p = node(tmp_path, demo_argv("ruby", "echo.rb"), sink)
    p.start()
    try:
        assert p.send([init(), echo(2)])
        msgs = sink.wait("messages", 2)
        assert [(m.src, m.dest, m.type, m.in_reply_to) for m in msgs] == [
            ("n1", "c0", "init_ok", 1), ("n1", "c1", "echo_ok", 2)]
        assert parse_line(sink.raw[1]) == msgs[1] and sink.raw[1].endswith(b"\n")
    finally:
        p.stop()
    assert "Initialized node n1" in (tmp_path / "n1.log").read_text()  # the demo's stderr
    exits = sink.wait("exits")
    assert exits[0].expected and sink.problems == []


def test_a_line_that_is_not_a_message_is_one_problem_naming_the_node(tmp_path):
    sink = Sink()
    argv = write_node(tmp_path, "garbage", "import sys\nprint('hello, ' * 500, flush=True)\n"
                      "print('{\"src\": \"n1\"}', flush=True)\nsys.stdin.read()\n")
    p = node(tmp_path, argv, sink, "n7")
    p.start()
    try:
        problems = sink.wait("problems", 2)
    finally:
        p.stop()
    first, second = (str(x) for x in problems)
    assert first.startswith("node n7 printed a line that is not a Maelstrom message: not JSON")
    assert '"hello, hello,' in first and "(3500 chars)" in first and len(first) < 300
    assert second == ('node n7 printed a line that is not a Maelstrom message: no dest, body field: '
                      '"{\\"src\\": \\"n1\\"}"')


def test_a_node_that_dies_is_reported_with_its_code_and_last_stderr(tmp_path):
    sink = Sink()
    argv = write_node(tmp_path, "dies", "import sys\nprint('starting', file=sys.stderr)\n"
                      "print('cannot open the database', file=sys.stderr)\nsys.exit(3)\n")
    p = node(tmp_path, argv, sink, "n2")
    p.start()
    exit_ = sink.wait("exits")[0]
    p.stop()
    assert (exit_.node, exit_.code, exit_.expected) == ("n2", 3, False)
    assert exit_.stderr_tail == ("starting", "cannot open the database")
    assert exit_.describe() == ("node n2 exited with code 3; its last stderr: starting | "
                                "cannot open the database")
    assert not p.running and not p.send([echo(1)])


def test_kill_is_a_crash_and_restart_a_fresh_process(tmp_path):
    sink = Sink()
    p = node(tmp_path, demo_argv("python", "echo.py"), sink)
    p.start()
    try:
        p.send([init()])
        sink.wait("messages")
        first = p.pid
        p.kill()
        exit_ = sink.wait("exits")[0]
        assert exit_.expected and exit_.describe().startswith("node n1 was killed by SIGKILL")
        assert not p.running
        p.restart()
        assert p.running and p.pid != first
        p.send([init(5)])
        assert sink.wait("messages", 2)[1].in_reply_to == 5  # a new process: it wants init again
    finally:
        p.stop()


def test_a_paused_node_answers_only_once_resumed(tmp_path):
    sink = Sink()
    p = node(tmp_path, demo_argv("js", "echo.js"), sink)
    p.start()
    try:
        p.send([init()])
        sink.wait("messages")
        p.pause()
        p.send([echo(2)])
        time.sleep(0.3)
        assert len(sink.messages) == 1 and p.running
        p.resume()
        assert sink.wait("messages", 2)[1].in_reply_to == 2
    finally:
        p.stop()


def test_a_paused_node_still_stops(tmp_path):
    sink = Sink()
    p = node(tmp_path, demo_argv("python", "echo.py"), sink)
    p.start()
    p.pause()
    started = time.monotonic()
    p.stop(grace=0.5)
    assert time.monotonic() - started < 10 and not p.running  # SIGKILLed after its grace


def test_a_huge_line_in_many_reads_is_one_problem_and_the_next_line_still_a_message(tmp_path):
    sink = Sink()
    argv = write_node(tmp_path, "huge", "import sys\nsys.stdout.write('z' * 1_000_000)\nsys.stdout.flush()\n"
                      "print()\nprint('{\"src\": \"n1\", \"dest\": \"c1\", \"body\": {\"type\": \"hi\"}}')\n"
                      "sys.stdout.flush()\nsys.stdin.read()\n")
    p = node(tmp_path, argv, sink)
    p.start()
    try:
        assert sink.wait("messages")[0].type == "hi"
    finally:
        p.stop()
    assert len(sink.problems) == 1 and "(1000000 chars)" in str(sink.problems[0])
