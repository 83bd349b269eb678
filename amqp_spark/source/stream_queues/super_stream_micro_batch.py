"""Super streams as one source: their partitions, found once per run, read as stream queues.

A super stream is a different kind of source from named stream queues, so it has a reader
class of its own (as Spark's Kafka source has one per kind of subscription), but its
partitions are stream queues: once :func:`with_partitions` has put them in the options'
``queues``, everything else is the stream-queue machinery (``StreamTails``, ranges read by
executors in parallel, filtering), with offsets of kind ``superStream``
(:class:`~amqp_spark.source.offsets.SuperStreamOffset`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from amqp_spark.source.connecting import open_with_retry
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.protocol_ranges import ProtocolPositions
from amqp_spark.source.stream_queues.ranges import StreamTails
from amqp_spark.source.stream_queues.stream_queue_micro_batch import (
    StreamProtocolMicroBatchReader,
    StreamQueueMicroBatchReader,
)
from amqp_spark.super_streams import describe, find

if TYPE_CHECKING:
    from amqp_spark.client import Connection

log = logging.getLogger("amqp_spark.source")


def with_partitions(options: SourceOptions) -> SourceOptions:
    """``options`` reading the partition streams of its ``superStream``, in partition
    order (see :mod:`amqp_spark.super_streams` for how they are found)."""
    name = options.super_stream
    if name is None:
        return options

    def connect() -> Connection:
        conn, _ = open_with_retry(
            options.uri, options.max_reconnect_attempts, "super stream partitions", _nothing
        )
        return conn

    layout = find(options.uri, name, options.management_url, connect)
    log.info("amqp source: %s", describe(layout, options.uri))
    options.check_partitions_named(layout.streams)
    return dataclasses.replace(options, queues=layout.streams)


def _nothing(conn: Connection) -> None:
    """No setup: the connection is for passive declares."""


class SuperStreamMicroBatchReader(StreamQueueMicroBatchReader):
    """``readStream`` with ``superStream``: the partitions are found when the runner first
    needs them; from then on the reader is the stream-queue reader of those partitions."""

    def _new_state(self) -> StreamTails:
        self.options = with_partitions(self.options)
        return super()._new_state()


class SuperStreamProtocolMicroBatchReader(StreamProtocolMicroBatchReader):
    """``readStream`` with ``superStream`` over RabbitMQ's stream protocol: the partitions
    found as above, each read as a stream queue over the protocol."""

    def _new_state(self) -> ProtocolPositions:
        self.options = with_partitions(self.options)
        return super()._new_state()
