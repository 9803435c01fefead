"""Length-prefixed JSON frames: the one wire format of the cluster (peer traffic and the client API).

A frame is a 4-byte big-endian payload length followed by that many bytes of UTF-8 JSON holding one
object. A length prefix (rather than newline-delimited JSON) lets a reader reject an oversized frame
before buffering it, which is how a peer or client speaking garbage is cut off without harming the node.
"""

from __future__ import annotations

import asyncio
import json
import json.encoder
import json.scanner
import struct
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct(">I")
#: Client requests are small; a larger frame is hostile or broken.
MAX_CLIENT_FRAME = 1 << 20
#: Peer frames carry batches of entries and whole snapshots.
MAX_PEER_FRAME = 64 << 20
#: built once: json.dumps with non-default separators builds a new encoder on every call, which
#: doubled the cost of encoding a frame
_ENCODER = json.JSONEncoder(separators=(",", ":"))
_DECODER = json.JSONDecoder()


def _compact_dumps() -> Callable[[Any], str]:
    """_ENCODER.encode without its per-call setup: JSONEncoder.encode builds a new C encoder (and a
    dict of the containers seen) on every call, which was half the cost of encoding a small frame.
    The one built here makes the same text. It keeps no dict of containers (one shared by the
    controller's client threads could see another thread's), so a circular structure recurses
    until RecursionError, which is turned into json's ValueError."""
    make = json.encoder.c_make_encoder  # type: ignore[attr-defined]
    if make is None:  # a Python without the C accelerator
        return _ENCODER.encode
    enc = make(None, _ENCODER.default, json.encoder.encode_basestring_ascii,  # type: ignore[attr-defined]
               None, ":", ",", False, False, True)

    def dumps(obj: Any) -> str:
        try:
            return "".join(enc(obj, 0))
        except RecursionError:
            raise ValueError("Circular reference detected (or nesting too deep)") from None

    return dumps


#: compact JSON text, the same as _ENCODER.encode makes (also the WAL's record payloads)
dumps = _compact_dumps()
#: json's C scanner called directly: JSONDecoder.decode adds two regular-expression matches for
#: the whitespace around the value, which a frame we send never has
_SCAN: Callable[[str, int], tuple[Any, int]] | None = (
    json.scanner.c_make_scanner(_DECODER) if json.scanner.c_make_scanner is not None else None  # type: ignore[attr-defined]
)


class FrameError(Exception):
    """A bad frame. fatal: the stream lost its framing (oversized or cut short) and must be closed;
    otherwise only this frame's payload was bad and the next frame can still be read."""

    def __init__(self, message: str, fatal: bool = True) -> None:
        super().__init__(message)
        self.fatal = fatal


def encode(obj: dict[str, Any]) -> bytes:
    """One frame holding `obj` as compact JSON."""
    payload = dumps(obj).encode()
    return HEADER.pack(len(payload)) + payload


def decode_payload(payload: bytes) -> dict[str, Any]:
    """The JSON object in one frame's payload, or FrameError saying what is wrong with it."""
    try:
        if payload[:1] == b"{" and payload[1:2] != b"\x00":
            # what json.loads would detect as UTF-8 (every frame we send), decoded without the
            # detection and the wrapper
            text = payload.decode("utf-8", "surrogatepass")
            try:
                obj, end = _SCAN(text, 0) if _SCAN is not None else (None, -1)
            except StopIteration:  # the scanner's "no value here": the decoder says why
                end = -1
            if end != len(text):  # whitespace after the value, or an error: the decoder's verdict
                obj = _DECODER.decode(text)
        else:
            obj = json.loads(payload)
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameError(f"frame is not valid JSON: {e}", fatal=False) from None
    except RecursionError:
        raise FrameError("frame nests JSON too deeply", fatal=False) from None
    if not isinstance(obj, dict):
        raise FrameError(f"frame holds a JSON {type(obj).__name__}, not an object", fatal=False)
    return obj


async def read_frame(reader: asyncio.StreamReader, max_size: int) -> dict[str, Any] | None:
    """The next frame's object; None at a clean end of stream (EOF between frames).

    Raises FrameError for an oversized frame, a stream cut inside a frame, or a payload that is not a
    JSON object.
    """
    buf: bytearray | None = getattr(reader, "_buffer", None)  # asyncio.StreamReader's
    if buf is not None:
        # The whole frame is taken in one slice from the reader's buffer once it is there, as the
        # two readexactly calls below would take it, without their coroutines (a frame per peer
        # message); until then the reader's own wait for data is awaited, which readexactly would
        # await as often. An error, an end of stream or an oversized frame is left to the
        # readexactly path below, which says what is wrong.
        while reader.exception() is None:
            if len(buf) >= HEADER.size:
                (length,) = HEADER.unpack_from(buf)
                if length > max_size:
                    break
                end = HEADER.size + length
                if len(buf) >= end:
                    payload = bytes(buf[HEADER.size:end])
                    del buf[:end]
                    reader._maybe_resume_transport()  # type: ignore[attr-defined]
                    return decode_payload(payload)
            if getattr(reader, "_eof", True):
                break
            await reader._wait_for_data("read_frame")  # type: ignore[attr-defined]
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise FrameError("stream ended inside a frame header") from None
    (length,) = HEADER.unpack(header)
    if length > max_size:
        raise FrameError(f"frame of {length} bytes exceeds the limit of {max_size} bytes")
    if buf is not None and len(buf) >= length and reader.exception() is None:
        # the header came after a wait, and with it, as a rule, the payload: sliced likewise
        payload = bytes(buf[:length])
        del buf[:length]
        reader._maybe_resume_transport()  # type: ignore[attr-defined]
        return decode_payload(payload)
    try:
        payload = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FrameError("stream ended inside a frame payload") from None
    return decode_payload(payload)


class FrameDecoder:
    """Incremental decoder for blocking sockets: feed bytes, take whole frames out."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Adds bytes; returns every frame now complete. Raises FrameError on a bad frame."""
        self._buf += data
        out: list[dict[str, Any]] = []
        while len(self._buf) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buf)
            if length > self.max_size:
                raise FrameError(f"frame of {length} bytes exceeds the limit of {self.max_size} bytes")
            end = HEADER.size + length
            if len(self._buf) < end:
                break
            out.append(decode_payload(bytes(self._buf[HEADER.size : end])))
            del self._buf[:end]
        return out
