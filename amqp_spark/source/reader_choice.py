"""``streamReader()``: one reader class per kind of queue, as Spark's Kafka source has one
class per kind of source rather than branches in one."""

from __future__ import annotations

from amqp_spark.source.classic.classic_micro_batch import ClassicQueueStream
from amqp_spark.source.micro_batch import QueueStream
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.stream_queue_micro_batch import StreamQueueStream
from amqp_spark.source.stream_queues.super_stream_micro_batch import SuperStreamQueueStream


def stream_reader(options: SourceOptions) -> QueueStream:
    """The streaming reader of ``options``' queue type."""
    if options.super_stream is not None:
        return SuperStreamQueueStream(options)
    if options.is_stream:
        return StreamQueueStream(options)
    return ClassicQueueStream(options)
