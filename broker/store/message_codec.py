"""A broker message as bytes, for the journal and for spilling queues to disk::

exchange shortstr, routing key shortstr, header-length u32, content-header payload
(the AMQP encoding of the properties, as sent to consumers), body (the rest)
"""

from __future__ import annotations

import struct

from broker.model.message import Message, StoredMessage

_HEADER_LENGTH = struct.Struct("<I")


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


def encoded_parts(data: bytes) -> tuple[bytes, bytes, bytes]:
    """The envelope (exchange and routing key as short strings, as basic.deliver ends with
    them), the content-header payload and the body of an encoded message, undecoded."""
    end = data[0] + 1
    end += 1 + data[end]
    (header_length,) = _HEADER_LENGTH.unpack_from(data, end)
    pos = end + _HEADER_LENGTH.size
    return data[:end], data[pos : pos + header_length], data[pos + header_length :]


def decode_message(data: bytes) -> StoredMessage:
    """The message, its properties decoded when first asked for."""
    envelope, header, body = encoded_parts(data)
    exchange, routing_key = envelope_names(envelope)
    return StoredMessage(exchange, routing_key, envelope, header, body)


def envelope_names(envelope: bytes) -> tuple[str, str]:
    """The exchange and routing key an envelope encodes."""
    end = envelope[0] + 1
    return envelope[1:end].decode(), envelope[end + 1 :].decode()
