"""A broker message as bytes, for the journal and for spilling queues to disk.

A basic message::

    exchange shortstr, routing key shortstr, header-length u32, content-header payload
    (the AMQP encoding of the properties, as sent to consumers), body (the rest)

Messages of the other content classes (the 0-9 file, stream and message classes) are encoded
by the codec their server module registers in ``CONTENT_CODECS`` under their AMQP class id;
``encode_content`` and ``decode_content`` take any class, named by that id as the journal's
PUBLISH records name it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from broker.model.message import Message, StoredMessage

_HEADER_LENGTH = struct.Struct("<I")


class ContentCodec(NamedTuple):
    encode: Callable[[Message], bytes]
    decode: Callable[[bytes], Message]


#: AMQP class id -> the codec of that content class (not basic, which is this module's own).
CONTENT_CODECS: dict[int, ContentCodec] = {}


def encode_content(message: Message) -> tuple[int, bytes]:
    """The message's class id and bytes, whatever its content class."""
    class_id = message.class_id
    if class_id == Message.class_id:
        return class_id, encode_message(message)
    return class_id, CONTENT_CODECS[class_id].encode(message)


def decode_content(class_id: int, data: bytes) -> Message:
    """The message ``encode_content`` gave ``class_id`` and ``data`` for."""
    if class_id == Message.class_id:
        return decode_message(data)
    codec = CONTENT_CODECS.get(class_id)
    if codec is None:
        raise ValueError(f"no codec registered for content class {class_id}")
    return codec.decode(data)


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
