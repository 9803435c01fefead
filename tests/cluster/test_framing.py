"""Frames: the bytes on the wire stay compact JSON behind a 4-byte length, and read back exactly."""

from __future__ import annotations

import asyncio
import json

import pytest
from jepsen_py.cluster.framing import HEADER, MAX_PEER_FRAME, FrameDecoder, FrameError, encode, read_frame


def test_encode_is_compact_json_behind_its_length_and_reads_back():
    obj = {"m": [{"type": "MsgApp", "src": "n1", "dst": "n2", "term": 3, "ctx": "é\u2028",
                  "entries": [{"term": 3, "index": 7, "data": {"op": "x", "f": 1.5, "n": None}}]}]}
    frame = encode(obj)
    payload = json.dumps(obj, separators=(",", ":")).encode()
    assert frame == HEADER.pack(len(payload)) + payload
    assert FrameDecoder(MAX_PEER_FRAME).feed(frame + frame) == [obj, obj]

    async def read() -> object:
        r = asyncio.StreamReader()
        r.feed_data(frame)
        r.feed_eof()
        return await read_frame(r, MAX_PEER_FRAME), await read_frame(r, MAX_PEER_FRAME)

    assert asyncio.run(read()) == (obj, None)


def test_encode_refuses_what_json_cannot_hold():
    with pytest.raises(TypeError):
        encode({"x": object()})
    circular: dict[str, object] = {}
    circular["self"] = circular
    with pytest.raises(ValueError):
        encode(circular)


def test_payloads_decode_as_json_loads_decodes_them():
    import json

    from jepsen_py.cluster.framing import FrameError, decode_payload

    good = [b'{"a":[1,2.5,null,true],"b":"\\u00e9"}', '{"é":1}'.encode(), '{"x":1}'.encode("utf-16-le"),
            '{"x":1}'.encode("utf-16"), '{"x":1}'.encode("utf-8-sig"), b"{}", b' {"x":1}']
    for p in good:
        assert decode_payload(p) == json.loads(p)
    for bad in [b"{", b'{"x":1} junk', b"[1]", b'{"x":\xff}', b"", b"{\x00"]:
        with pytest.raises(FrameError) as e:
            decode_payload(bad)
        assert not e.value.fatal


def test_the_fast_encoder_writes_what_json_dumps_writes():
    from jepsen_py.cluster.framing import dumps

    values = [{"m": [["MsgApp", "n1", "n2", 3, 0, 4, [[3, 5, {"op": "x", "f": 1.5}]], 0, False, 0, None]]},
              {"id": 1, "value": [1, 2.25, -0.0, 1e300, float("nan"), "é\n\"\u2028", {"k": None}]},
              [], {}, "x", 5, None, 1.0, True, (1, "t")]
    for v in values:
        assert dumps(v) == json.dumps(v, separators=(",", ":"))
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError):
        dumps(deep)


def test_frames_buffered_whole_or_in_pieces_read_back_in_order_and_an_error_still_wins():
    async def read() -> tuple[list[object], type[BaseException] | None]:
        r = asyncio.StreamReader()
        frames = [encode({"i": i, "pad": "x" * i}) for i in range(5)]
        r.feed_data(b"".join(frames[:3]) + frames[3][:3])  # three whole frames, a cut header
        got = [await read_frame(r, MAX_PEER_FRAME) for _ in range(3)]
        r.feed_data(frames[3][3:] + frames[4][:6])
        got.append(await read_frame(r, MAX_PEER_FRAME))
        r.feed_data(frames[4][6:])
        got.append(await read_frame(r, MAX_PEER_FRAME))
        r.feed_data(encode({"late": True}))
        r.set_exception(ConnectionResetError())  # a broken stream raises whatever is buffered
        try:
            await read_frame(r, MAX_PEER_FRAME)
        except ConnectionResetError as e:
            return got, type(e)
        return got, None

    got, error = asyncio.run(read())
    assert got == [{"i": i, "pad": "x" * i} for i in range(5)]
    assert error is ConnectionResetError


def test_a_frame_arriving_while_the_reader_waits_is_read_whole_and_the_next_waits_for_its_payload():
    async def read() -> list[object]:
        r = asyncio.StreamReader()
        waiting = asyncio.ensure_future(read_frame(r, MAX_PEER_FRAME))
        await asyncio.sleep(0)  # the reader now waits for data
        second = encode({"n": 2})
        r.feed_data(encode({"n": 1}) + second[:5])  # one frame, then a header and one payload byte
        first = await waiting
        waiting = asyncio.ensure_future(read_frame(r, MAX_PEER_FRAME))
        await asyncio.sleep(0)
        r.feed_data(second[5:])
        return [first, await waiting]

    assert asyncio.run(read()) == [{"n": 1}, {"n": 2}]


def test_a_reader_that_waits_for_its_frame_needs_no_readexactly_and_edge_cases_still_say_why():
    """Waiting for a frame awaits the reader's own wait for data, as often as readexactly would,
    without its coroutine; an empty payload, an oversized frame and a cut stream still end as before."""

    async def read() -> list[object]:
        r = asyncio.StreamReader()
        calls: list[int] = []
        exact = r.readexactly

        async def counted(n: int) -> bytes:
            calls.append(n)
            return await exact(n)

        r.readexactly = counted  # type: ignore[method-assign]
        frame = encode({"n": 1})
        waiting = asyncio.ensure_future(read_frame(r, MAX_PEER_FRAME))
        for i in range(len(frame)):  # a byte at a time: one wait per byte, then the frame
            await asyncio.sleep(0)
            assert not waiting.done()
            r.feed_data(frame[i:i + 1])
        got: list[object] = [await waiting, calls[:]]
        r.feed_data(HEADER.pack(0))  # an empty payload is not a JSON object
        with pytest.raises(FrameError, match="not valid JSON"):
            await read_frame(r, MAX_PEER_FRAME)
        r.feed_data(HEADER.pack(100))
        with pytest.raises(FrameError, match="exceeds"):
            await read_frame(r, 10)
        r2 = asyncio.StreamReader()
        r2.feed_data(frame[:6])
        r2.feed_eof()
        with pytest.raises(FrameError, match="inside a frame payload"):
            await read_frame(r2, MAX_PEER_FRAME)
        return got

    assert asyncio.run(read()) == [{"n": 1}, []]
