"""The service's wire format, version 1: one framed message per protocol step (``service``).

Frame: a 4-byte big-endian length, then the message: the 4-byte magic ``LSA1`` (format version 1),
a 4-byte header length, the header (UTF-8 JSON: ``type``, small fields, and ``blobs``: the byte length
of each binary part), then the binary parts back to back.  Keys, sealed bundles, masked vectors,
bitmaps, signatures and shares travel as raw bytes, never as text, so the bytes on the wire are the
protocol's payload plus a small header (measured by perf/bench_secagg.py --part service).  A peer
speaking another version gets one ``ProtocolError`` naming both versions; a frame over
``MAX_FRAME`` bytes is refused before it is read.
"""

from __future__ import annotations

import asyncio
import json

from .protocol import ProtocolError

MAGIC = b"LSA1"
VERSION = 1
MAX_FRAME = 64 << 20


def encode(kind: str, blobs: list[bytes] = (), **fields) -> bytes:
    """One framed message of type ``kind`` with JSON ``fields`` and binary ``blobs``."""
    header = json.dumps({"type": kind, "blobs": [len(b) for b in blobs], **fields}, separators=(",", ":")).encode()
    body = MAGIC + len(header).to_bytes(4, "big") + header + b"".join(blobs)
    return len(body).to_bytes(4, "big") + body


def decode(body: bytes) -> tuple[dict, list[bytes]]:
    """(header, blobs) of one message body (without its frame length)."""
    if body[:4] != MAGIC:
        raise ProtocolError(
            f"the peer speaks wire format {body[:4]!r}, this end {MAGIC!r} (version {VERSION}); upgrade the older end"
        )
    size = int.from_bytes(body[4:8], "big")
    header = json.loads(body[8 : 8 + size])
    blobs, at = [], 8 + size
    for length in header.pop("blobs"):
        blobs.append(body[at : at + length])
        at += length
    if at != len(body):
        raise ProtocolError(f"a {header.get('type')!r} message has {len(body) - at} bytes beyond its parts")
    return header, blobs


async def read(reader: asyncio.StreamReader) -> tuple[dict, list[bytes], int]:
    """The next message: (header, blobs, bytes read); IncompleteReadError when the peer has gone."""
    size = int.from_bytes(await reader.readexactly(4), "big")
    if size > MAX_FRAME:
        raise ProtocolError(f"a frame of {size} bytes, over the limit of {MAX_FRAME}")
    header, blobs = decode(await reader.readexactly(size))
    return header, blobs, size + 4


def id_map(ids, blobs) -> dict[int, bytes]:
    return dict(zip((int(i) for i in ids), blobs, strict=True))
