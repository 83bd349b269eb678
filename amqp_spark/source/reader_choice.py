"""``streamReader()``: one reader class per kind of queue, as Spark's Kafka source has one
class per kind of source rather than branches in one."""

from __future__ import annotations

from amqp_spark.source.classic.classic_micro_batch import ClassicMicroBatchReader
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.stream_queue_micro_batch import StreamQueueMicroBatchReader
from amqp_spark.source.stream_queues.super_stream_micro_batch import SuperStreamMicroBatchReader


def micro_batch_reader(options: SourceOptions) -> MicroBatchReader:
    """The streaming reader of ``options``' queue type."""
    if options.super_stream is not None:
        return SuperStreamMicroBatchReader(options)
    if options.is_stream:
        return StreamQueueMicroBatchReader(options)
    return ClassicMicroBatchReader(options)
