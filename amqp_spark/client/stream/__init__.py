"""A blocking client of RabbitMQ's stream protocol (see ``connection``)."""

from amqp_spark.client.stream.connection import (
    DEFAULT_STREAM_PORT,
    StreamClient,
    StreamEndpoint,
    StreamError,
    default_stream_uri,
)

__all__ = [
    "DEFAULT_STREAM_PORT",
    "StreamClient",
    "StreamEndpoint",
    "StreamError",
    "default_stream_uri",
]
