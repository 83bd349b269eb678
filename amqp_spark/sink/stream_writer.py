"""One task's rows into streams over RabbitMQ's stream protocol: the ``stream`` option, and
``superStream`` with ``streamProtocol`` 'stream'.

The task opens one stream-protocol connection (``streamUri``) and writes under its producer
name with its rows' publishing ids (``stream_ids``): a super stream's rows go to the
partition stream their binding key names (chosen as over AMQP 0-9-1, ``super_stream``).
Before the first row for a stream, the publisher is declared and the stream asked for the
highest publishing id it holds under that name: the rows at or below it were stored by an
earlier attempt of this task (a retried task, a batch replayed after a restart) and are not
sent again; the broker would drop them anyway. The task returns once every row sent is
confirmed, so Spark commits the batch only when all its rows are in the streams.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

import pyarrow as pa

from amqp_spark.client.stream import StreamClient, StreamEndpoint
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
    ``ids.query``); returns how many rows the streams hold for it."""
    publishing = PublishingIds(producer_name(ids.query, ids.partition), ids.batch)
    route = _route(settings)
    endpoint = StreamEndpoint.parse(settings.stream_uri_for_connections)
    with StreamClient(endpoint) as client:
        publisher = StreamPublisher(client, publishing.producer, settings.max_in_flight, where)
        stored: dict[str, int] = {}  #: stream -> its highest publishing id for the producer
        already = row = 0
        for batch in batches:
            for run in to_stream_runs(batch, plan, settings, ids, publishing, row, route):
                if run.stream not in stored:
                    stored[run.stream] = publisher.declare(run.stream)
                new = [m for m in run.messages if m.publishing_id > stored[run.stream]]
                already += len(run.messages) - len(new)
                publisher.publish(run.stream, new)
            row += batch.num_rows
        confirmed = publisher.finish()
    if already:
        log.info(
            "amqp sink: %d of the %d row(s) of %s were in the stream(s) already, written by "
            "an earlier attempt; not sent again",
            already,
            row,
            where,
        )
    return confirmed + already


def _route(settings: SinkSettings) -> str | Mapping[str, str]:
    """The stream every row goes to, or the partition stream by binding key."""
    if settings.stream is not None:
        return settings.stream
    return {p.binding_key: p.stream for p in layout_of(settings).partitions}
