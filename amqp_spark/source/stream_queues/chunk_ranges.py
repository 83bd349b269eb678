"""Offset ranges read over the stream protocol, by the executors, chunk by chunk into Arrow.

A task subscribes at its range's first offset with ``CHUNK_CREDIT`` chunks of credit and
grants one more per chunk taken, so at most that many chunks are on their way or waiting.
The broker delivers whole chunks as stored: the first may begin before the range (its
records before the start are skipped), and the read ends with the chunk that reaches the
range's end (its records past the end are dropped). The driver's ends are always ends of
user chunks (``protocol_ends``), so that chunk comes.

Each chunk's records become columns in one pass (``amqp_protocol.amqp10.columns``: the
stored AMQP 1.0 messages as a 0-9-1 consumer of RabbitMQ 4 sees them, the properties of
messages that share them decoded once), then one Arrow record batch per
``ROWS_PER_RECORD_BATCH`` rows. The columns a 0-9-1 delivery adds are filled as such a
consumer of the range would have them: ``redelivered`` false, and ``delivery_tag`` the
count of records from the range's start on (RabbitMQ's 0-9-1 consumer at an offset skips
the records of the first chunk before it, measured on 4.0.5).

Retention (``failOnDataLoss``): a subscription at an offset retention removed starts at the
stream's first chunk, so a first chunk past the start makes the reader ask ``StreamStats``
where the stream begins; only a stream that begins past the start lost offsets (RabbitMQ's
tracking chunks, never delivered, leave gaps too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from amqp_protocol.amqp10.columns import decode_columns
from amqp_protocol.stream.chunk import parse_chunk
from amqp_protocol.stream.values import OffsetSpecification, OffsetType
from amqp_spark.source.arrow import record_batch_of
from amqp_spark.source.connecting import BrokerUnavailable
from amqp_spark.source.partitions import StreamRangePartition
from amqp_spark.source.stream_queues.data_loss import lost
from amqp_spark.source.stream_queues.ranges import ROWS_PER_RECORD_BATCH
from amqp_spark.source.stream_queues.resume import resuming

if TYPE_CHECKING:
    from amqp_spark.client.stream import StreamClient

#: Chunks a range read lets the broker send ahead.
CHUNK_CREDIT = 4


@dataclasses.dataclass
class StreamProtocolRange(StreamRangePartition):
    """Offsets ``[start, end)`` of one stream, read over the stream protocol at
    ``stream_uri``."""

    stream_uri: str = ""


def over_stream_protocol(
    parts: list[StreamRangePartition], stream_uri: str
) -> list[StreamProtocolRange]:
    """The same ranges, read over the stream protocol."""
    return [
        StreamProtocolRange(
            **{f.name: getattr(p, f.name) for f in dataclasses.fields(p)}, stream_uri=stream_uri
        )
        for p in parts
    ]


def read_chunk_range(part: StreamProtocolRange) -> Iterator[pa.RecordBatch]:
    """``read_chunk_range_once``, read on from the offset after the last row yielded when
    its connection is lost (on another address of ``streamUri``; see ``resume``)."""
    from amqp_spark.client.stream import StreamConnectionError

    return resuming(part, read_chunk_range_once, StreamConnectionError)


def read_chunk_range_once(part: StreamRangePartition) -> Iterator[pa.RecordBatch]:
    """The messages at offsets ``[start, end)`` of a stream, as record batches (see the
    module docstring). Fails (never hangs) when the stream stops delivering before the
    range's end: a silence of ``pollTimeoutMs`` x 10."""
    from amqp_spark.client.stream import StreamConnectionError, connect

    assert isinstance(part, StreamProtocolRange)
    try:
        client = connect(
            part.stream_uri,
            retries=part.max_reconnect_attempts,
            properties={"connection_name": "amqp-spark stream range reader"},
        )
    except StreamConnectionError as e:
        raise BrokerUnavailable(
            f"amqp source (stream range reader): cannot connect over the stream protocol "
            f"after {part.max_reconnect_attempts + 1} attempt(s): {e}. Check 'streamUri' "
            "(or 'uri' and 'addresses') and that the broker is up; 'maxReconnectAttempts' "
            "sets how often to retry."
        ) from e
    try:
        yield from _read(client, part)
    finally:
        client.close()


def _read(client: StreamClient, part: StreamProtocolRange) -> Iterator[pa.RecordBatch]:
    from amqp_spark.client.stream import StreamTimeout

    subscription = client.subscribe(
        part.queue, OffsetSpecification(OffsetType.OFFSET, part.start), CHUNK_CREDIT
    )
    pending: dict[str, list[Any]] | None = None
    position, delivered = part.start, 0
    while position < part.end:
        try:
            delivery = subscription.next_chunk(timeout=part.poll_timeout * 10)
        except StreamTimeout:
            raise TimeoutError(
                f"amqp source: stream queue {part.queue!r} stopped delivering at offset "
                f"{position}, before offset {part.end - 1}, which ends the planned range "
                f"[{part.start}, {part.end})"
            ) from None
        subscription.credit(1)
        chunk = parse_chunk(delivery.chunk)
        first, after = chunk.header.first_offset, chunk.header.next_offset
        if position == part.start and first > part.start:
            begins = client.stream_stats(part.queue)["first_chunk_id"]
            if begins > part.start:
                lost(part.queue, part.start, begins, part.fail_on_data_loss)
                if begins >= part.end:
                    break  # retention removed all that was left to read
        records = chunk.records()
        skip = max(position - first, 0)
        take = records[skip : max(part.end - first, 0)]
        if take:
            columns = decode_columns(take, part.queue, first + skip)
            tag = delivered + 1
            columns["delivery_tag"] = list(range(tag, tag + len(take)))
            pending = columns if pending is None else _extended(pending, columns)
        delivered += len(records) - skip
        position = max(position, after)
        if pending is not None and len(pending["body"]) >= ROWS_PER_RECORD_BATCH:
            yield _record_batch(pending, part.queue)
            pending = None
    subscription.close()
    if pending is not None:
        yield _record_batch(pending, part.queue)


def _extended(columns: dict[str, list[Any]], more: dict[str, list[Any]]) -> dict[str, list[Any]]:
    for name, values in more.items():
        columns[name] += values
    return columns


def _record_batch(columns: dict[str, list[Any]], queue: str) -> pa.RecordBatch:
    n = len(columns["body"])
    arrays: dict[str, pa.Array | list[Any]] = dict(columns)
    arrays["queue"] = pa.nulls(n, pa.string()).fill_null(queue)
    arrays["redelivered"] = pa.array([False] * n, pa.bool_())
    return record_batch_of(arrays)
