"""One task's rows into streams over RabbitMQ's stream protocol: the ``stream`` option, and
``superStream`` with ``streamProtocol`` 'stream'.

The task opens one stream-protocol connection to a node of ``streamUri`` (every node of
``addresses`` unless set; ``client.stream.nodes``) and writes under its producer name with
its rows' publishing ids (``stream_ids``): a super stream's rows go to the
partition stream their binding key names (chosen as over AMQP 0-9-1, ``super_stream``).
Before the first row for a stream, the publisher is declared and the stream asked for the
highest publishing id it holds under that name, which says how many of the rows an earlier
attempt of this task stored (a retried task, a batch replayed after a restart): that is
logged, and every row is sent all the same. The broker drops those it holds when they
arrive, which stays right when the answer came from a leader that failed before it
replicated them (skipping them would lose them). The task returns once every row is
confirmed, so Spark commits the batch only when all its rows are in the streams. A
connection lost meanwhile (its node died), or a stream without a leader for a moment, moves
the task to the next node, where it sends again what the stream does not hold
(``StreamPublisher``); ``maxReconnectAttempts`` bounds each reconnection and the losses in a
row without a confirm.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping

import pyarrow as pa

from amqp_spark.client.stream import StreamClient
from amqp_spark.client.stream.nodes import nothing, open_stream
from amqp_spark.client.stream.publisher import StreamPublisher

from .columns import ColumnPlan
from .messages import MessageIds
from .settings import SinkSettings
from .stream_ids import PublishingIds, producer_name
from .stream_messages import to_stream_runs
from .super_stream import layout_of

log = logging.getLogger(__name__)


def publish_to_streams(
    batches: Iterator[pa.RecordBatch],
    plan: ColumnPlan,
    settings: SinkSettings,
    ids: MessageIds,
    where: str,
) -> int:
    """Write the rows of one task (partition ``ids.partition`` of batch ``ids.batch`` of
    ``ids.query``); returns how many rows were confirmed (those dropped as held included)."""
    publishing = PublishingIds(producer_name(ids.query, ids.partition), ids.batch)
    route = _route(settings)
    uri, attempts = settings.stream_uri_for_connections, settings.max_reconnect_attempts

    def reconnect(setup: Callable[[StreamClient], None]) -> StreamClient:
        return open_stream(uri, attempts, f"amqp sink ({where})", setup)[0]

    publisher = StreamPublisher(
        reconnect(nothing),
        publishing.producer,
        settings.max_in_flight,
        where,
        reconnect=reconnect,
        max_losses=attempts + 1,
    )
    try:
        declared: set[str] = set()
        row = 0
        for batch in batches:
            for run in to_stream_runs(batch, plan, settings, ids, publishing, row, route):
                if run.stream not in declared:
                    declared.add(run.stream)
                    _log_earlier_attempt(publishing, publisher.declare(run.stream), run.stream)
                publisher.publish(run.stream, run.messages)
            row += batch.num_rows
        return publisher.finish()
    finally:
        publisher.client.close()


def _log_earlier_attempt(publishing: PublishingIds, sequence: int, stream: str) -> None:
    """Say what the stream holds of this task's batch already (the broker drops it)."""
    if publishing.is_behind(sequence):
        log.warning(
            "amqp sink: stream %r holds a later batch of %s than batch %d: the query replays "
            "a batch from before its last write (a checkpoint restored from a copy?); the "
            "stream drops every row of it",
            stream,
            publishing.producer,
            publishing.batch,
        )
    elif held := publishing.rows_in_stream(sequence):
        log.info(
            "amqp sink: stream %r holds the first %d row(s) of batch %d of %s from an "
            "earlier attempt; they are sent again and dropped by the stream",
            stream,
            held,
            publishing.batch,
            publishing.producer,
        )


def _route(settings: SinkSettings) -> str | Mapping[str, str]:
    """The stream every row goes to, or the partition stream by binding key."""
    if settings.stream is not None:
        return settings.stream
    return {p.binding_key: p.stream for p in layout_of(settings).partitions}
