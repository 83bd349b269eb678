"""A broker message as bytes, for the journal and for spilling queues to disk::

exchange shortstr, routing key shortstr, header-length u32, content-header payload
(the AMQP encoding of the properties, as sent to consumers), body (the rest)
"""

from __future__ import annotations

import struct

from amqp_spark.protocol import SPEC_0_9_1
from broker.model.message import Message

_HEADER_LENGTH = struct.Struct("<I")
#: class-id u16, weight u16, body-size u64: what precedes the property flags in the payload
_HEADER_PREFIX = 12
_BasicProperties = SPEC_0_9_1.properties("basic")


def encode_message(message: Message) -> bytes:
    exchange = message.exchange.encode()
    routing_key = message.routing_key.encode()
    header = message.header_payload
    return b"".join(
        (
            bytes((len(exchange),)),
            exchange,
            bytes((len(routing_key),)),
            routing_key,
            _HEADER_LENGTH.pack(len(header)),
            header,
            message.body,
        )
    )


def decode_message(data: bytes) -> Message:
    pos = data[0] + 1
    exchange = data[1:pos].decode()
    end = pos + 1 + data[pos]
    routing_key = data[pos + 1 : end].decode()
    (header_length,) = _HEADER_LENGTH.unpack_from(data, end)
    pos = end + 4
    header = data[pos : pos + header_length]
    properties = _BasicProperties.decode(header, _HEADER_PREFIX)
    return Message(exchange, routing_key, properties, data[pos + header_length :])
