"""Maelstrom's wire format: a line is a message or one precise sentence saying why it is not."""

from __future__ import annotations

import json

import pytest

from jepsen_py.maelstrom.protocol import ERRORS, BadMessage, Message, encode, error_code, parse_line


def test_a_message_parses_and_encodes_back_to_one_line():
    line = '{"src": "c1", "dest": "n1", "body": {"type": "echo", "msg_id": 3, "echo": "hi"}}'
    msg = parse_line(line)
    assert msg == Message("c1", "n1", {"type": "echo", "msg_id": 3, "echo": "hi"})
    assert (msg.type, msg.msg_id, msg.in_reply_to) == ("echo", 3, None)
    out = encode(msg)
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    assert parse_line(out) == msg
    assert parse_line(line.encode()) == msg


@pytest.mark.parametrize(("line", "says"), [
    ("hello world", "not JSON"),
    ('{"src": "n1"', "not JSON"),
    ("[1, 2]", "not a JSON object but a list"),
    ('"text"', "not a JSON object but a str"),
    ('{"dest": "c1", "body": {"type": "x"}}', "no src field"),
    ('{"src": "n1", "body": {"type": "x"}}', "no dest field"),
    ('{"src": "n1"}', "no dest, body field"),
    ('{"src": 1, "dest": "c1", "body": {"type": "x"}}', "src is not a non-empty string"),
    ('{"src": "n1", "dest": "", "body": {"type": "x"}}', "dest is not a non-empty string"),
    ('{"src": "n1", "dest": "c1", "body": [1]}', "body is not a JSON object"),
    ('{"src": "n1", "dest": "c1", "body": {"echo": 1}}', "body has no string type"),
    ('{"src": "n1", "dest": "c1", "body": {"type": 7}}', "body has no string type"),
    ('{"src": "n1", "dest": "c1", "body": {"type": "x", "msg_id": "7"}}', "msg_id is not an integer"),
    ('{"src": "n1", "dest": "c1", "body": {"type": "x", "in_reply_to": true}}',
     "in_reply_to is not an integer"),
    (b"\xff\xfe", "not JSON"),
])
def test_anything_else_is_refused_in_one_line_that_quotes_it(line, says):
    with pytest.raises(BadMessage) as e:
        parse_line(line)
    text = str(e.value)
    assert says in text and "\n" not in text
    if isinstance(line, str):
        assert json.dumps(line)[1:-1][:20] in text  # what was printed, quoted


def test_a_long_line_is_quoted_truncated():
    with pytest.raises(BadMessage) as e:
        parse_line("x" * 100_000)
    text = str(e.value)
    assert len(text) < 300 and "(100000 chars)" in text


def test_error_codes_say_definite_or_indefinite_as_maelstrom_defines():
    definite = {c for c, e in ERRORS.items() if e.definite}
    assert definite == {1, 10, 11, 12, 14, 20, 21, 22, 30}
    assert {c for c, e in ERRORS.items() if not e.definite} == {0, 13}
    assert error_code(11).name == "temporarily-unavailable"
    assert error_code(13).name == "crash"
    custom = error_code(1001)
    assert (custom.name, custom.definite) == ("custom", False)  # custom codes are always indefinite
    assert error_code(5).definite is False
