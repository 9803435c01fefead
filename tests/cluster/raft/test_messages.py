"""Wire records: a JSON round trip keeps every field; garbage from a peer is refused with a clear error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.cluster.raft import Entry, Message, MessageDecodeError, Snapshot
from jepsen_py.cluster.raft.messages import MESSAGE_TYPES, MSG_APP, MSG_SNAP

names = st.sampled_from(["n1", "n2", "n3"])
data = st.none() | st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)
entries = st.builds(Entry, term=st.integers(0, 99), index=st.integers(0, 999), data=data)
snapshots = st.builds(
    Snapshot,
    index=st.integers(0, 999),
    term=st.integers(0, 99),
    peers=st.lists(names, max_size=3).map(tuple),
    data=st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
messages = st.builds(
    Message,
    type=st.sampled_from(sorted(MESSAGE_TYPES)),
    src=names,
    dst=names,
    term=st.integers(0, 99),
    log_term=st.integers(0, 99),
    index=st.integers(0, 999),
    entries=st.lists(entries, max_size=3).map(tuple),
    commit=st.integers(0, 999),
    reject=st.booleans(),
    reject_hint=st.integers(0, 999),
    context=st.none() | st.text(max_size=8),
    snapshot=st.none() | snapshots,
)


@settings(max_examples=200, derandomize=True, database=None)
@given(messages)
def test_json_round_trip_keeps_every_field(m):
    assert Message.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_compact_encoding_omits_defaults():
    assert Message(type=MSG_APP, src="n1", dst="n2", term=3).to_dict() == {
        "type": MSG_APP, "src": "n1", "dst": "n2", "term": 3,
    }


@pytest.mark.parametrize(
    ("wire", "complaint"),
    [
        ([], "must be an object"),
        ({"type": "MsgNope", "src": "a", "dst": "b"}, "unknown message type"),
        ({"type": MSG_APP, "src": 1, "dst": "b"}, "src and dst"),
        ({"type": MSG_APP, "src": "a", "dst": "b", "term": -1}, "term"),
        ({"type": MSG_APP, "src": "a", "dst": "b", "term": True}, "term"),
        ({"type": MSG_APP, "src": "a", "dst": "b", "entries": {}}, "entries must be a list"),
        ({"type": MSG_APP, "src": "a", "dst": "b", "entries": [{"term": 1, "index": 1, "data": 5}]}, "data"),
        ({"type": MSG_APP, "src": "a", "dst": "b", "reject": "yes"}, "reject"),
        ({"type": MSG_SNAP, "src": "a", "dst": "b", "snapshot": {"peers": "n1"}}, "peers"),
        ({"type": MSG_APP, "src": "a", "dst": "b", "context": 7}, "context"),
    ],
)
def test_malformed_messages_are_refused(wire, complaint):
    with pytest.raises(MessageDecodeError, match=complaint):
        Message.from_dict(wire)


@settings(max_examples=200, derandomize=True, database=None)
@given(messages)
def test_wire_round_trip_through_json_keeps_every_field(m):
    assert Message.from_wire(json.loads(json.dumps(m.to_wire()))) == m


def test_the_wire_form_is_the_array_of_fields_entries_as_arrays():
    m = Message(type=MSG_APP, src="n1", dst="n2", term=3, index=4, entries=(Entry(3, 5, {"op": "x"}),))
    assert json.loads(json.dumps(m.to_wire())) == [MSG_APP, "n1", "n2", 3, 0, 4, [[3, 5, {"op": "x"}]], 0,
                                                   False, 0, None, None]


def wire(**fields):
    """A valid MsgApp's wire array with some fields replaced."""
    w = json.loads(json.dumps(Message(type=MSG_APP, src="a", dst="b", term=1).to_wire()))
    for name, value in fields.items():
        w[Message._fields.index(name)] = value
    return w


@pytest.mark.parametrize(
    ("w", "complaint"),
    [
        ({"type": MSG_APP, "src": "a", "dst": "b"}, "must be an array"),
        (wire()[:-1], "must be an array of 12 fields"),
        (wire(type="MsgNope"), "unknown message type"),
        (wire(type=["MsgApp"]), "unknown message type"),
        (wire(src=1), "src and dst"),
        (wire(term=-1), "term"),
        (wire(commit=True), "commit"),
        (wire(index=1.5), "index"),
        (wire(entries={}), "entries must be a list"),
        (wire(entries=[[1, 1, 5]]), "data"),
        (wire(entries=[[1, 1]]), "entry must be"),
        (wire(entries=[[1, False, None]]), "index"),
        (wire(reject="yes"), "reject"),
        (wire(snapshot={"peers": "n1"}), "peers"),
        (wire(context=7), "context"),
    ],
)
def test_malformed_wire_messages_are_refused(w, complaint):
    with pytest.raises(MessageDecodeError, match=complaint):
        Message.from_wire(w)
