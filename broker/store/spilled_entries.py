"""Queue entries spilled to disk: what a queue larger than memory keeps beyond its threshold.

Each entry is its journal message id, redelivered flag and expiry time in front of the
encoded message, in a ``SpillFifo``.
"""

from __future__ import annotations

import math
import struct

from broker.model.message import QueuedMessage

from .message_codec import decode_message, encode_message
from .spill import SpillFifo

#: message id u64, redelivered u8, expires-at f64 (NaN: never)
_HEAD = struct.Struct("<QBd")


class SpilledEntries:
    """A ``broker.model.persistence.SpillQueue`` over a ``SpillFifo``."""

    def __init__(self, fifo: SpillFifo) -> None:
        self._fifo = fifo

    def __len__(self) -> int:
        return len(self._fifo)

    def push(self, entry: QueuedMessage) -> None:
        expires = math.nan if entry.expires_at is None else entry.expires_at
        head = _HEAD.pack(entry.message.msg_id, entry.redelivered, expires)
        self._fifo.push(head + encode_message(entry.message))

    def pop(self) -> QueuedMessage:
        data = self._fifo.pop()
        msg_id, redelivered, expires = _HEAD.unpack_from(data)
        message = decode_message(data[_HEAD.size :])
        message.msg_id = msg_id
        entry = QueuedMessage(message, None if math.isnan(expires) else expires)
        entry.redelivered = bool(redelivered)
        return entry

    def close(self) -> None:
        self._fifo.close()
