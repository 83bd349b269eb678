"""``streamReader()``: one reader class per kind of queue, as Spark's Kafka source has one
class per kind of source rather than branches in one; for stream queues, one per protocol
(``streamProtocol``)."""

from __future__ import annotations

import logging

from amqp_spark.client.exceptions import ClientError
from amqp_spark.client.stream.nodes import connect_stream
from amqp_spark.options import OptionError, redact_uri
from amqp_spark.source.classic.classic_micro_batch import ClassicMicroBatchReader
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.options import STREAM_PROTOCOLS, SourceOptions
from amqp_spark.source.stream_queues.stream_queue_micro_batch import (
    StreamProtocolMicroBatchReader,
    StreamQueueMicroBatchReader,
)
from amqp_spark.source.stream_queues.super_stream_micro_batch import (
    SuperStreamMicroBatchReader,
    SuperStreamProtocolMicroBatchReader,
)

log = logging.getLogger("amqp_spark.source")

#: How long ``auto`` waits for the stream protocol to answer before it uses AMQP 0-9-1.
PROBE_SECONDS = 3.0


def micro_batch_reader(options: SourceOptions) -> MicroBatchReader:
    """The streaming reader of ``options``' queue type (and protocol, for streams)."""
    if not options.is_stream:
        return ClassicMicroBatchReader(options)
    if over_stream_protocol(options):
        if options.super_stream is not None:
            return SuperStreamProtocolMicroBatchReader(options)
        return StreamProtocolMicroBatchReader(options)
    if options.super_stream is not None:
        return SuperStreamMicroBatchReader(options)
    return StreamQueueMicroBatchReader(options)


def over_stream_protocol(options: SourceOptions) -> bool:
    """Whether stream queues are read over RabbitMQ's stream protocol: ``streamProtocol``
    'stream', or 'auto' when the broker answers on ``streamUri`` (logged either way)."""
    wanted = options.stream_protocol
    filtering = options.stream_filter is not None
    if wanted == "amqp":
        return False
    if wanted == "stream" and filtering:
        raise OptionError(
            "streamProtocol",
            wanted,
            " or ".join(p for p in STREAM_PROTOCOLS if p != "stream"),
            "filterValues is read over AMQP 0-9-1 only for now",
        )
    where = redact_uri(options.stream_uri_for_connections)
    if filtering:
        log.info("amqp source: stream queues read over AMQP 0-9-1 (filterValues is read there)")
        return False
    if wanted == "stream":
        log.info("amqp source: stream queues read over the stream protocol at %s", where)
        return True
    try:
        connect_stream(options.stream_uri_for_connections, timeout=PROBE_SECONDS).close()
    except (ClientError, OSError) as e:
        log.info(
            "amqp source: stream queues read over AMQP 0-9-1: the stream protocol does not "
            "answer at %s (%s); set streamUri if it is served elsewhere",
            where,
            e,
        )
        return False
    log.info("amqp source: stream queues read over the stream protocol at %s", where)
    return True
