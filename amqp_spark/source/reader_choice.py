"""``streamReader()``: one reader class per kind of queue and protocol, as Spark's Kafka
source has one class per kind of source rather than branches in one. Streams are read over
the stream protocol or AMQP 0-9-1 as ``streamProtocol`` says (``protocol_choice``)."""

from __future__ import annotations

from amqp_spark.source.classic.classic_micro_batch import ClassicMicroBatchReader
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.protocol_choice import stream_protocol_uri
from amqp_spark.source.stream_queues.stream_protocol_micro_batch import (
    StreamProtocolMicroBatchReader,
)
from amqp_spark.source.stream_queues.stream_queue_micro_batch import StreamQueueMicroBatchReader
from amqp_spark.source.stream_queues.super_stream_micro_batch import SuperStreamMicroBatchReader


def micro_batch_reader(options: SourceOptions) -> MicroBatchReader:
    """The streaming reader of ``options``' queue type (and, for streams, protocol)."""
    if options.is_stream:
        stream_uri = stream_protocol_uri(options)
        if stream_uri is not None:
            return StreamProtocolMicroBatchReader(options, stream_uri)
    if options.super_stream is not None:
        return SuperStreamMicroBatchReader(options)
    if options.is_stream:
        return StreamQueueMicroBatchReader(options)
    return ClassicMicroBatchReader(options)
