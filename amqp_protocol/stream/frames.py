"""Stream-protocol frames: a frame's command from its bytes, and Deliver's frame prefix.

A frame is a u32 size (of what follows) and a body: key (u16; 0x8000 set on responses),
version (u16), then the command's fields (``generated/stream.py``).
"""

from __future__ import annotations

import struct

from amqp_protocol.generated.stream import BY_KEY_VERSION, Deliver, DeliverV2

from .command import Command
from .errors import MalformedFrame
from .values import Buffer

__all__ = ["KEY_VERSION", "decode_frame", "deliver_prefix"]

#: A frame body's key and version.
KEY_VERSION = struct.Struct(">HH")
_DELIVER_V1 = struct.Struct(">IHHB")
_DELIVER_V2 = struct.Struct(">IHHBQ")
_KNOWN_KEYS = frozenset(key for key, _ in BY_KEY_VERSION)


def decode_frame(body: Buffer) -> Command:
    """The command of a frame's ``body`` (the bytes after its size prefix).

    Pass a ``memoryview``: a ``Deliver``'s chunk and a ``Publish``'s messages are then
    slices of it, not copies. Raises :class:`MalformedFrame` (response code 0x0d, unknown
    frame) for an unknown key or version or a body that does not decode.
    """
    if len(body) < 4:
        raise MalformedFrame(f"a frame of {len(body)} bytes has no key and version (4 bytes)")
    key, version = KEY_VERSION.unpack_from(body)
    cls = BY_KEY_VERSION.get((key, version))
    if cls is None:
        if key in _KNOWN_KEYS:
            raise MalformedFrame(f"command key 0x{key:04x} has no version {version}")
        raise MalformedFrame(f"unknown command key 0x{key:04x} (version {version})")
    return cls.decode(body, 4)


def deliver_prefix(
    subscription_id: int, chunk_size: int, committed_chunk_id: int | None = None
) -> bytes:
    """The bytes of a ``Deliver`` frame before its chunk (v2 when ``committed_chunk_id`` is
    given): a server writes them, then the chunk's parts, without joining them."""
    if committed_chunk_id is None:
        return _DELIVER_V1.pack(5 + chunk_size, Deliver.KEY, Deliver.VERSION, subscription_id)
    return _DELIVER_V2.pack(
        13 + chunk_size, DeliverV2.KEY, DeliverV2.VERSION, subscription_id, committed_chunk_id
    )
