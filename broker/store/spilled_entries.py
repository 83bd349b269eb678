"""Queue entries spilled to disk: what a queue larger than memory keeps beyond its threshold.

Each entry is its journal message id, redelivered flag, delivery count (``x-delivery-count``),
expiry time, content class id and ``BCC`` keys (``Message.blind_keys``) in front of the encoded
message (``encode_content``: basic messages and those of the 0-9 classes alike), in a
``SpillFifo``.
"""

from __future__ import annotations

import math
import struct

from amqp_protocol.values import encode_shortstr
from broker.model.message import QueuedMessage

from .message_codec import decode_content, encode_content
from .spill import SpillFifo

#: message id u64, redelivered u8, delivery count u32, expires-at f64 (NaN: never), content
#: class id u16, number of BCC keys u16 (each a short string after this head)
_HEAD = struct.Struct("<QBIdHH")


class SpilledEntries:
    """A ``broker.model.ready_messages.SpillQueue`` over a ``SpillFifo``."""

    def __init__(self, fifo: SpillFifo) -> None:
        self._fifo = fifo

    def __len__(self) -> int:
        return len(self._fifo)

    def push(self, entry: QueuedMessage) -> None:
        message = entry.message
        expires = math.nan if entry.expires_at is None else entry.expires_at
        class_id, encoded = encode_content(message)
        keys = message.blind_keys
        head = _HEAD.pack(
            message.msg_id, entry.redelivered, entry.delivery_count, expires, class_id, len(keys)
        )
        if keys:
            head += b"".join(map(encode_shortstr, keys))
        self._fifo.push(head + encoded)

    def pop(self) -> QueuedMessage:
        data = self._fifo.pop()
        msg_id, redelivered, delivery_count, expires, class_id, key_count = _HEAD.unpack_from(data)
        pos = _HEAD.size
        keys = []
        for _ in range(key_count):
            end = pos + 1 + data[pos]
            keys.append(data[pos + 1 : end].decode("utf-8", "surrogateescape"))
            pos = end
        message = decode_content(class_id, data[pos:])
        message.msg_id = msg_id
        message.blind_keys = tuple(keys)
        entry = QueuedMessage(message, None if math.isnan(expires) else expires)
        entry.redelivered = bool(redelivered)
        entry.delivery_count = delivery_count
        return entry

    def close(self) -> None:
        self._fifo.close()
