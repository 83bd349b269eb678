"""A blocking client of RabbitMQ's stream protocol (port 5552) on the sans-IO
``amqp_protocol.stream``: connect (addresses, retries), requests by correlation id,
subscriptions with chunk credit, publishers with confirms. See ``connection`` for the
threads, and docs/source.md for how the source reads streams with it."""

from .abc import PublisherListener
from .connection import StreamClient, connect
from .exceptions import StreamConnectionError, StreamError, StreamNoNodeAnswered, StreamTimeout
from .parameters import StreamParameters, parse_stream_url
from .subscription import ChunkDelivery, Subscription

__all__ = [
    "ChunkDelivery",
    "PublisherListener",
    "StreamClient",
    "StreamConnectionError",
    "StreamError",
    "StreamNoNodeAnswered",
    "StreamParameters",
    "StreamTimeout",
    "Subscription",
    "connect",
    "parse_stream_url",
]
