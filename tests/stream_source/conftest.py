"""The fixture ``urls``: (AMQP URL, stream URI) of the bundled broker and of RabbitMQ 4,
shared with the Spark tests of the stream protocol."""

from tests.spark.test_source_stream_protocol import urls

__all__ = ["urls"]
