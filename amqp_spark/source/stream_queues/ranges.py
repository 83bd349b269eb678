"""Stream queues: positions on the driver, offset ranges read by the executors.

A stream queue keeps its messages, so a batch is a range of offsets per queue that any
executor can read again: each task opens its own consumer at the range's start
(``x-stream-offset``; RabbitMQ requires a prefetch and manual acks, which only give credit)
and stops at the range's end. Replaying a range returns the same messages: exactly-once
replay, for sinks that are idempotent per batch.

How the driver learns where a stream ends, cheaply. AMQP 0-9-1 has no "stream length"
call and ``queue.declare-ok`` does not report it for streams. The driver therefore keeps
one *tail* consumer per stream, started at ``x-stream-offset=last`` (the first message of
the stream's last chunk), and follows it: every delivery carries its offset in the
``x-stream-offset`` header and the next offset to read is the highest seen plus one. This
costs one extra copy of each message to the driver (acked at once, never buffered) but no
round trip per trigger: ``latestOffset`` answers from what the tail has seen.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from amqp_spark.server_product import is_rabbitmq
from amqp_spark.source.arrow import STREAM_OFFSET_HEADER, stream_offset_of, to_record_batch
from amqp_spark.source.connecting import consume_on_new_channel, not_a_stream, open_with_retry
from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import StreamRangePartition
from amqp_spark.source.stream_queues import positions
from amqp_spark.source.stream_queues.data_loss import lost
from amqp_spark.source.stream_queues.filter_plan import ExactRead, MatchesSeen
from amqp_spark.source.stream_queues.resume import resuming
from amqp_spark.stream_filter import rabbitmq_without_filtering

if TYPE_CHECKING:
    from amqp_spark.client import Channel, Connection, Delivery

log = logging.getLogger("amqp_spark.source")

#: Rows per record batch an executor yields while reading a range.
ROWS_PER_RECORD_BATCH = 10_000
#: The tail is "settled" once no delivery came for this long (end of the last chunk).
SETTLE_SECONDS = 0.3


class StreamTails:
    """The driver's view of where each stream queue ends."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._lock = threading.RLock()
        self._conn: Connection | None = None
        self._tails: dict[str, Channel] = {}
        self._next: dict[str, int] = {}  #: queue -> next offset (known once something was seen)
        self._bytes = self._count = 0  #: for an average message size (maxBytesPerTrigger)
        self._target: dict[str, int] | None = None  #: AvailableNow: never read past this
        self._filter = options.stream_filter
        #: with filterValues: per queue, the matches the tail saw and since when it watches
        self._seen = {q: MatchesSeen() for q in options.queues}
        self._unfiltered_said: set[str] = set()  #: queues whose unfiltered read was logged

    def _ensure_open(self) -> None:
        if self._conn is not None and self._conn.is_open:
            return
        self._conn = None
        for seen in self._seen.values():
            seen.detached()  # what comes until the tails are back is not seen
        opts = self._options

        def follow_tails(conn: Connection) -> dict[str, Channel]:
            return {
                queue: consume_on_new_channel(
                    conn,
                    queue,
                    opts.queue_type,
                    opts.consumer_prefetch,
                    {STREAM_OFFSET_HEADER: "last"},
                )
                for queue in opts.queues
            }

        self._conn, self._tails = open_with_retry(
            opts.uri, opts.max_reconnect_attempts, "stream positions", follow_tails
        )
        old = rabbitmq_without_filtering(self._conn.server_properties)
        if self._filter is not None and old is not None:
            log.warning(
                "amqp source: RabbitMQ %s ignores stream filters (3.13+): filterValues %s "
                "still gives only matching rows, but every message of the streams is read",
                old,
                ",".join(self._filter.values),
            )
        self._settle()

    def _follow(self) -> int:
        """Take in what the tails received; never blocks. Returns how many."""
        from amqp_spark.client import ClientError

        seen = 0
        try:
            for queue, ch in self._tails.items():
                deliveries = ch.drain_deliveries(max_count=100_000)
                for d in deliveries:
                    offset = stream_offset_of(d)
                    if offset is None:  # left unacked: the broker requeues it at close
                        raise not_a_stream(queue, "a delivery has no x-stream-offset header")
                    if offset >= self._next.get(queue, 0):
                        self._next[queue] = offset + 1
                    self._bytes += len(d.body)
                    if self._filter is not None:
                        self._seen[queue].note(offset, self._filter.keeps(d.properties))
                if deliveries:
                    ch.basic_ack(deliveries[-1].delivery_tag, multiple=True)
                    seen += len(deliveries)
            self._count += seen
        except ClientError:
            self._conn = None  # reopened (and re-settled) by the next _ensure_open()
        return seen

    def exact_read(self, queue: str, begin: int, end: int) -> ExactRead | None:
        """With filterValues, how to read the matches of ``[begin, end)`` exactly (see
        :mod:`~amqp_spark.source.stream_queues.filter_plan`); None when the tail saw it hold
        none."""
        with self._lock:
            seen = self._seen[queue]
            seen.forget_before(begin)  # earlier batches are read
            read = seen.read_of(begin, end)
            if read is not None and not read.on_broker and queue not in self._unfiltered_said:
                self._unfiltered_said.add(queue)
                log.info(
                    "amqp source: no match of filterValues is known at or after offset %d of "
                    "stream queue %r (written before the source watched it): offsets %d to %d "
                    "are read unfiltered, which is exact but transfers every message",
                    begin,
                    queue,
                    begin,
                    read.end - 1,
                )
            return read

    def _settle(self) -> None:
        """Follow until nothing arrives for a moment: the tail then knows the end of the
        stream as it was when consuming started (bounded by ``pollTimeoutMs`` overall)."""
        deadline = time.monotonic() + max(self._options.poll_timeout, SETTLE_SECONDS)
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if self._follow():
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= SETTLE_SECONDS:
                return
            time.sleep(0.02)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    # -- offsets ------------------------------------------------------------------------------

    def ends(self) -> dict[str, int]:
        """Per queue, the next offset to be written (0 for a stream never seen to hold one)."""
        with self._lock:
            self._ensure_open()
            self._follow()
            ends = {q: self._next.get(q, 0) for q in self._options.queues}
            if self._target is not None:
                ends = {q: min(ends[q], self._target[q]) for q in ends}
            return ends

    def limit_to_current_end(self) -> None:
        """AvailableNow: never read past where the streams end now."""
        with self._lock:
            self._target = None
            self._ensure_open()
            self._settle()
            self._target = {q: self._next.get(q, 0) for q in self._options.queues}

    def initial(self) -> StreamOffset:
        """Where a query without a checkpoint starts, per ``startingOffsets``."""
        return positions.initial(self._options, self.ends(), self._probe)

    def _probe(self, queue: str, spec: str | datetime.datetime) -> int | None:
        """``probe`` on the driver's connection, reopened (bounded retries) when the probe
        is the first to find that connection dead, as after a network cut."""
        from amqp_spark.client import ConnectionClosed

        with self._lock:
            self._ensure_open()
            assert self._conn is not None
            try:
                return probe(self._conn, queue, spec, self._options.poll_timeout)
            except ConnectionClosed:
                self._conn = None
                self._ensure_open()
                assert self._conn is not None
                return probe(self._conn, queue, spec, self._options.poll_timeout)

    def latest(self, start: StreamOffset, limits: Limits) -> StreamOffset:
        """The end of the next batch: what the tails have seen, within the limits (bytes
        are estimated from the average message size seen)."""
        positions.check_reads(self._options, start)
        ends = self.ends()
        room = positions.room(limits, self._count, self._bytes)
        return positions.batch_end(self._options, start, ends, room)

    def report(self) -> dict[str, int]:
        with self._lock:
            return {q: self._next.get(q, 0) for q in self._options.queues}


def probe(
    conn: Connection, queue: str, spec: str | datetime.datetime, timeout: float
) -> int | None:
    """The offset of the first delivery a consumer at ``spec`` ('first' or a timestamp,
    as ``x-stream-offset`` takes them) gets (None: none came)."""
    ch = conn.channel()
    try:
        ch.basic_qos(prefetch_count=1)
        ch.basic_consume(queue, arguments={STREAM_OFFSET_HEADER: spec})
        d = ch.next_delivery(timeout=timeout)
        return None if d is None else stream_offset_of(d)
    finally:
        ch.close()


def first_offset(first_message: int | None, server_properties: Mapping[str, Any]) -> int | None:
    """The first offset a stream whose first message is at ``first_message`` holds: that
    message's, except on RabbitMQ, where every segment but a stream's first one opens with a
    tracking chunk of one offset and no message (measured on 3.10.8 and 4.0.5). Once
    retention removed the first segment, the offset before the first message is that
    chunk's: a query whose next offset it is (it read the message before) lost nothing."""
    if first_message and is_rabbitmq(server_properties):
        return first_message - 1
    return first_message


def plan_ranges(
    options: SourceOptions, start: StreamOffset, end: StreamOffset, tails: StreamTails
) -> list[StreamRangePartition]:
    """The partitions of a batch: each queue's range cut into ``rowsPerPartition`` pieces
    (with filterValues, a range the broker filters is one piece, read up to a match
    ``tails`` knows)."""
    parts = []
    for queue in options.queues:
        begin, stop = (
            start.positions.get(queue, end.positions.get(queue, 0)),
            end.positions.get(queue, 0),
        )
        for first, last, filtered_to in _pieces(options, tails, queue, begin, stop):
            parts.append(
                StreamRangePartition(
                    uri=options.uri,
                    queue=queue,
                    start=first,
                    end=last,
                    stream_filter=options.stream_filter,
                    filter_on_broker=filtered_to is not None,
                    stop_at=last - 1 if filtered_to is None else filtered_to,
                    prefetch=options.consumer_prefetch,
                    poll_timeout=options.poll_timeout,
                    max_reconnect_attempts=options.max_reconnect_attempts,
                    fail_on_data_loss=options.fail_on_data_loss,
                )
            )
    return parts


def _pieces(
    options: SourceOptions, tails: StreamTails, queue: str, begin: int, stop: int
) -> Iterator[tuple[int, int, int | None]]:
    """(first offset, end, the match a filtered read stops at, or None for a read by offset)
    of each range of a queue. A range the broker filters is not cut: how many rows a stretch
    of offsets holds is not known, and each piece would need a match to stop at."""
    if begin >= stop:
        return
    if options.stream_filter is not None:
        read = tails.exact_read(queue, begin, stop)
        if read is None:
            return
        if read.on_broker:
            yield begin, stop, read.stop_at
            return
        stop = read.end
    for first in range(begin, stop, options.rows_per_partition):
        yield first, min(first + options.rows_per_partition, stop), None


def read_range(part: StreamRangePartition) -> Iterator[pa.RecordBatch]:
    """``read_range_once``, read on from the offset after the last row yielded when its
    connection is lost (on another node of ``addresses``; see ``resume``)."""
    return resuming(part, read_range_once)


def read_range_once(part: StreamRangePartition) -> Iterator[pa.RecordBatch]:
    """The messages at offsets ``[start, end)`` of a stream queue, as record batches.

    The read ends at the first delivery at or after ``stop_at``, an offset the driver saw
    (the range's last offset, or with a filter a match the broker is sure to deliver; see
    :mod:`~amqp_spark.source.stream_queues.filter_plan`), so it never ends early however slow the
    broker. It fails (never hangs) when the stream stops delivering before that: a silence of
    ``pollTimeoutMs`` x 10 means the stream was truncated or the broker is unwell. With a
    filter, each delivery is checked again: only matching messages become rows.
    """
    wanted = part.stream_filter
    stop_at = part.end - 1 if part.stop_at is None else part.stop_at

    def consume_from_start(conn: Connection) -> Channel:
        arguments: dict[str, Any] = {STREAM_OFFSET_HEADER: part.start}
        if wanted is not None and part.filter_on_broker:
            arguments.update(wanted.consume_arguments())
        return consume_on_new_channel(conn, part.queue, "stream", part.prefetch, arguments)

    conn, ch = open_with_retry(
        part.uri, part.max_reconnect_attempts, "stream range reader", consume_from_start
    )

    def first_held() -> int | None:
        found = probe(conn, part.queue, "first", part.poll_timeout)
        return first_offset(found, conn.server_properties)

    try:
        pending: list[Delivery] = []
        last, unacked, ack_every = part.start - 1, 0, max(1, part.prefetch // 2)
        while last < stop_at:
            d = ch.next_delivery(timeout=part.poll_timeout * 10)
            if d is None:
                first = first_held()
                if first is None or first <= stop_at:
                    raise TimeoutError(
                        f"amqp source: stream queue {part.queue!r} stopped delivering after "
                        f"offset {last} before offset {stop_at}, which ends the planned range "
                        f"[{part.start}, {part.end})"
                    )
                if last < part.start:  # retention removed all that was left to read
                    lost(part.queue, part.start, first, part.fail_on_data_loss)
                break
            unacked += 1
            if unacked >= ack_every:  # acks on a stream only give credit
                ch.basic_ack(d.delivery_tag, multiple=True)
                unacked = 0
            offset = stream_offset_of(d)
            if offset is None or offset < part.start:
                continue  # a chunk starts before the asked offset
            if last == part.start - 1 and offset > part.start:
                # Offsets without a message (RabbitMQ puts a tracking chunk at the start of
                # each segment) leave gaps too, and so do the chunks a filter skips: only a
                # stream that begins later lost some.
                first = first_held()
                if first is not None and first > part.start:
                    lost(part.queue, part.start, first, part.fail_on_data_loss)
            last = offset
            if offset < part.end and (wanted is None or wanted.keeps(d.properties)):
                pending.append(d)
            if len(pending) >= ROWS_PER_RECORD_BATCH:
                yield to_record_batch(pending, part.queue, with_offsets=True)
                pending = []
        if pending:
            yield to_record_batch(pending, part.queue, with_offsets=True)
    finally:
        conn.close()
