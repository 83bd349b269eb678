"""AMQP 1.0: the type system and the message format (``types``, ``message``), the
conversions to and from AMQP 0-9-1 as RabbitMQ 4 makes them for streams (``amqp091``), and
the column decoder of the source (``columns``). Standard library only."""

from amqp_protocol.amqp10.amqp091 import (
    Amqp091Delivery,
    from_amqp091,
    from_amqp091_message,
    to_amqp091,
)
from amqp_protocol.amqp10.columns import StoredColumns
from amqp_protocol.amqp10.message import Header, Message, Properties, decode_message, encode_message
from amqp_protocol.amqp10.types import AMQP10DecodeError, decode, encode

__all__ = [
    "AMQP10DecodeError",
    "Amqp091Delivery",
    "Header",
    "Message",
    "Properties",
    "decode",
    "StoredColumns",
    "decode_message",
    "encode",
    "encode_message",
    "from_amqp091",
    "from_amqp091_message",
    "to_amqp091",
]
