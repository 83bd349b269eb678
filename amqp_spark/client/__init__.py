"""A blocking, thread-safe AMQP client on the sans-IO protocol layer.

See the "Client contract" section of docs/architecture.md.
"""

from .channel import Channel
from .connection import Connection, connect
from .delivery import Delivery, ReturnedMessage
from .exceptions import (
    AMQPConnectionError,
    ChannelClosed,
    ClientError,
    ClientTimeout,
    ConnectionClosed,
    ConsumerCancelled,
    PublishNacked,
    PublishReturned,
)
from .parameters import ConnectionParameters, parse_url

__all__ = [
    "AMQPConnectionError",
    "Channel",
    "ChannelClosed",
    "ClientError",
    "ClientTimeout",
    "Connection",
    "ConnectionClosed",
    "ConnectionParameters",
    "ConsumerCancelled",
    "Delivery",
    "PublishNacked",
    "PublishReturned",
    "ReturnedMessage",
    "connect",
    "parse_url",
]
