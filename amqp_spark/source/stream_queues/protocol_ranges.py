"""Stream queues over RabbitMQ's stream protocol: positions on the driver, ranges read by the
executors chunk by chunk.

Where a stream ends, without a tail consumer. ``StreamStats`` answers the first offset of
the stream's first and last committed chunks (``first_chunk_id``, ``committed_chunk_id``);
the end is the newest chunk of messages' first offset plus its record count, which one
subscription at ``last`` with a credit of one chunk reads from the chunk's header (the
committed chunk may be a tracking chunk, which readers are never sent). So the driver does a
round trip per stats request and one chunk read only when the last chunk changed: work per
chunk written, never per message. Stats are asked at most every ``REFRESH_SECONDS``
(Spark calls ``latestOffset`` some 70 times a second when idle), and always afresh when an
AvailableNow run fixes its end.

An executor subscribes at its range's start with a credit of ``CREDIT_CHUNKS`` chunks,
gives credit back as it takes chunks, gathers the records of the range over chunks into
columns (``amqp_protocol.amqp10.columns``, as a 0-9-1 consumer of RabbitMQ 4 has them) and
yields a record batch per ``ROWS_PER_RECORD_BATCH`` rows, until the range's end.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import pyarrow as pa

from amqp_protocol.amqp10.columns import FIELDS, StoredColumns
from amqp_protocol.amqp10.types import Buffer
from amqp_protocol.stream.chunk import ChunkHeader, ChunkType, parse_chunk, parse_chunk_header
from amqp_protocol.stream.values import OffsetSpecification, OffsetType
from amqp_spark.client import backoff
from amqp_spark.client.stream import StreamClient
from amqp_spark.client.stream.nodes import is_transient, nothing, open_stream
from amqp_spark.source.arrow import stored_to_record_batch
from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import StreamProtocolRangePartition
from amqp_spark.source.stream_queues import positions
from amqp_spark.source.stream_queues.data_loss import lost
from amqp_spark.source.stream_queues.ranges import ROWS_PER_RECORD_BATCH
from amqp_spark.source.stream_queues.resume import resuming
from amqp_spark.stream_filter import StreamFilter

log = logging.getLogger("amqp_spark.source")
T = TypeVar("T")

#: At most this often does the driver ask the broker where the streams end.
REFRESH_SECONDS = 0.1
#: Chunks an executor's subscription may have on their way at once (credit is given back
#: half of them at a time: one Credit frame per CREDIT_CHUNKS / 2 chunks).
CREDIT_CHUNKS = 16
#: A record batch is yielded once its records' chunks hold this many bytes (large
#: messages), if not at ``ROWS_PER_RECORD_BATCH`` rows before.
BYTES_PER_RECORD_BATCH = 16 * 1024 * 1024
#: RabbitMQ sends a subscription's chunks only while its credit is above half the credit
#: it subscribed with (``send_limit`` in ``rabbit_stream_reader.erl``).
SEND_LIMIT = CREDIT_CHUNKS // 2
#: The subscription id of the driver's one-chunk reads and of an executor's range read.
_SUBSCRIPTION = 0
#: How often a filtered range read asks whether the chunk holding its end is committed.
_COMMITTED_POLL_SECONDS = 0.05
#: Where a kind of message's headers are in ``StoredColumns.fields``.
_HEADERS = FIELDS.index("headers")


class ProtocolPositions:
    """The driver's view of where each stream queue begins and ends, over the protocol."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._lock = threading.RLock()
        self._client: StreamClient | None = None
        #: per queue: (committed chunk id, end) last learned
        self._last: dict[str, tuple[int, int]] = {}
        self._asked_at = float("-inf")
        self._target: dict[str, int] | None = None
        #: messages and their bytes in the chunks read (an average size for maxBytesPerTrigger)
        self._records_seen = self._bytes_seen = 0

    def _connected(self) -> StreamClient:
        if self._client is None:
            self._client, _ = open_stream(
                self._options.stream_uri_for_connections,
                self._options.max_reconnect_attempts,
                "amqp source (stream positions)",
                nothing,
                timeout=max(self._options.poll_timeout, 5),
            )
        return self._client

    def _on_a_node(self, ask: Callable[[StreamClient], T]) -> T:
        """``ask`` on the driver's connection; when that is lost (or a stream has no leader
        for a moment), asked again on a new one, to the next node of ``streamUri`` first:
        ``maxReconnectAttempts`` times at most, from the second loss in a row after a pause."""
        losses = 0
        while True:
            time.sleep(backoff.after_losses(losses))
            try:
                return ask(self._connected())
            except Exception as e:
                self.close(move_on=True)  # the next call connects again, to the next node
                losses += 1
                if not is_transient(e) or losses > self._options.max_reconnect_attempts:
                    raise
                log.warning("amqp source: stream positions asked again after: %s", e)

    def close(self, move_on: bool = False) -> None:
        with self._lock:
            client, self._client = self._client, None
            if client is not None:
                client.close(move_on)

    def _refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._asked_at < REFRESH_SECONDS:
            return
        self._on_a_node(self._ask_ends)
        self._asked_at = time.monotonic()

    def _ask_ends(self, client: StreamClient) -> None:
        for queue in self._options.queues:
            committed = client.stream_stats(queue).get("committed_chunk_id", -1)
            known = self._last.get(queue)
            if known is not None and known[0] == committed:
                continue
            end = None if committed < 0 else self._end_of_last_chunk(client, queue)
            if end is None:  # no chunk of messages: the end known before, if any
                end = 0 if known is None else known[1]
            self._last[queue] = (committed, end)

    def _end_of_last_chunk(self, client: StreamClient, queue: str) -> int | None:
        """The offset after the stream's newest message: the header of the chunk a
        one-chunk subscription at ``last`` gets, the newest chunk of messages (None: none
        came, the stream holds no message). Not the committed chunk's: that may be a
        tracking chunk (a ``StoreOffset``; RabbitMQ 4.0.5 writes one after the messages and
        never delivers it, measured), and a range ending past the newest message would wait
        for a chunk that never comes."""
        header = self._first_chunk(client, queue, OffsetSpecification(OffsetType.LAST))
        return None if header is None else header.next_offset

    def _first_of(self, client: StreamClient, queue: str, spec: OffsetSpecification) -> int | None:
        """The first offset a subscription at ``spec`` gets (None: nothing came)."""
        header = self._first_chunk(client, queue, spec)
        return None if header is None else header.first_offset

    def _first_chunk(
        self, client: StreamClient, queue: str, spec: OffsetSpecification
    ) -> ChunkHeader | None:
        """The header of the first chunk a one-chunk subscription at ``spec`` gets (None:
        nothing came within ``pollTimeoutMs``)."""
        client.subscribe(_SUBSCRIPTION, queue, spec, 1)
        try:
            delivery = client.next_delivery(self._options.poll_timeout)
        finally:
            client.unsubscribe(_SUBSCRIPTION)
        if delivery is None:
            return None
        header = parse_chunk_header(delivery.chunk)
        self._seen(header)
        return header

    def _seen(self, header: ChunkHeader) -> None:
        """Take a chunk's size into the average message size (``maxBytesPerTrigger``): its
        data over its records, the stored message (body and AMQP 1.0 sections) with its
        entry header, read from the chunk's header alone (no work per message)."""
        if header.chunk_type == ChunkType.USER and header.num_records:
            self._records_seen += header.num_records
            self._bytes_seen += header.data_length

    def ends(self, force: bool = False) -> dict[str, int]:
        """Per queue, the next offset to be written."""
        with self._lock:
            self._refresh(force)
            ends = {q: self._last[q][1] for q in self._options.queues}
            if self._target is not None:
                ends = {q: min(ends[q], self._target[q]) for q in ends}
            return ends

    def limit_to_current_end(self) -> None:
        """AvailableNow: never read past where the streams end now."""
        with self._lock:
            self._target = None
            self._target = self.ends(force=True)

    def initial(self) -> StreamOffset:
        """Where a query without a checkpoint starts, per ``startingOffsets``."""
        return positions.initial(self._options, self.ends(force=True), self._probe)

    def _probe(self, queue: str, spec: str | datetime.datetime) -> int | None:
        """The first offset of the chunk a subscription at ``spec`` ('first' or a moment)
        gets (None: nothing came)."""
        if isinstance(spec, str):
            where = OffsetSpecification(OffsetType.FIRST)
        else:
            where = OffsetSpecification(OffsetType.TIMESTAMP, int(spec.timestamp() * 1000))
        with self._lock:
            return self._on_a_node(lambda client: self._first_of(client, queue, where))

    def latest(self, start: StreamOffset, limits: Limits) -> StreamOffset:
        """The end of the next batch: where the streams end, within the limits (bytes are
        estimated from the size of the messages of the chunks read, see ``_seen``)."""
        positions.check_reads(self._options, start)
        ends = self.ends()
        with self._lock:
            room = positions.room(limits, self._records_seen, self._bytes_seen)
        return positions.batch_end(self._options, start, ends, room)

    def report(self) -> dict[str, int]:
        with self._lock:
            return {q: self._last.get(q, (-1, 0))[1] for q in self._options.queues}

    def committed(self) -> dict[str, int]:
        """Per queue, the stream's committed chunk id (-1: none), as last learned."""
        with self._lock:
            self._refresh()
            return {q: self._last[q][0] for q in self._options.queues}


def plan_protocol_ranges(
    options: SourceOptions,
    start: StreamOffset,
    end: StreamOffset,
    committed: Mapping[str, int] | None = None,
) -> list[StreamProtocolRangePartition]:
    """The partitions of a batch: each queue's range cut into ``rowsPerPartition`` pieces
    (a filtered read of each is exact on its own: see ``_chunks``). ``committed``: with
    ``filterValues``, each queue's committed chunk id as the driver last learned it."""
    committed = committed or {}
    parts = []
    for queue in options.queues:
        begin = start.positions.get(queue, end.positions.get(queue, 0))
        stop = end.positions.get(queue, 0)
        for first in range(begin, stop, options.rows_per_partition):
            parts.append(
                StreamProtocolRangePartition(
                    stream_uri=options.stream_uri_for_connections,
                    queue=queue,
                    start=first,
                    end=min(first + options.rows_per_partition, stop),
                    poll_timeout=options.poll_timeout,
                    max_reconnect_attempts=options.max_reconnect_attempts,
                    fail_on_data_loss=options.fail_on_data_loss,
                    stream_filter=options.stream_filter,
                    committed_chunk_id=committed.get(queue, -1),
                )
            )
    return parts


def read_protocol_range(part: StreamProtocolRangePartition) -> Iterator[pa.RecordBatch]:
    """``read_protocol_range_once``, read on from the offset after the last row yielded when
    its connection is lost (on the next node of ``streamUri``; see ``resume``)."""
    return resuming(part, read_protocol_range_once, is_transient)


def read_protocol_range_once(part: StreamProtocolRangePartition) -> Iterator[pa.RecordBatch]:
    """The messages at offsets ``[start, end)`` of a stream queue, as record batches of
    ``ROWS_PER_RECORD_BATCH`` rows or ``BYTES_PER_RECORD_BATCH`` of chunks (the last one
    smaller); with ``filterValues``, only the messages whose filter value matches.

    Records are gathered over chunks into one ``StoredColumns`` per record batch: a chunk
    may hold a few records only (RabbitMQ 4 cut 200,000 messages published over 0-9-1 in
    batches of 1,000 into chunks of 23 on average, measured), and a record batch (or a
    column decoder's cache) per chunk cost more than the records. Fails (never hangs) when
    the stream stops delivering before the range's end: a silence of ``pollTimeoutMs`` x 10
    means the stream was truncated or the broker is unwell.
    """
    with _connected_for(part) as client:
        _subscribe(client, part)
        rows = _Rows(part.queue, part.stream_filter)
        next_offset = part.start
        for delivered in _chunks(client, part):
            chunk = parse_chunk(delivered)
            header = chunk.header
            if header.next_offset <= next_offset:
                continue  # a chunk before the range (the subscription starts at its chunk)
            if header.first_offset > next_offset:
                _check_gap(client, part, next_offset, header.first_offset)
            next_offset = header.next_offset
            if header.chunk_type == ChunkType.USER:
                skip = max(part.start - header.first_offset, 0)
                keep = min(part.end, header.next_offset) - header.first_offset
                if keep > skip:
                    rows.add(chunk.records()[skip:keep], header.first_offset + skip)
                    rows.size += header.data_length
                if rows.count >= ROWS_PER_RECORD_BATCH or rows.size >= BYTES_PER_RECORD_BATCH:
                    yield rows.take()
            if next_offset >= part.end:
                break
        if rows.count:
            yield rows.take()


def _connected_for(part: StreamProtocolRangePartition) -> StreamClient:
    """A connection to a node of the range's ``stream_uri`` (``maxReconnectAttempts`` passes
    over them). A subscription refused for a while (the stream without a leader) or lost
    later is retried by ``read_protocol_range`` from the last row read."""
    client, _ = open_stream(
        part.stream_uri, part.max_reconnect_attempts, "amqp source (stream range)", nothing
    )
    return client


def _subscribe(client: StreamClient, part: StreamProtocolRangePartition) -> None:
    """Subscribe at the range's start with ``CREDIT_CHUNKS`` chunks of credit; with a
    filter, as Subscribe properties, once the node has the range's end (``_chunks``)."""
    properties = None
    if part.stream_filter is not None:
        _await_committed(client, part)
        properties = part.stream_filter.subscribe_properties()
    spec = OffsetSpecification(OffsetType.OFFSET, part.start)
    client.subscribe(_SUBSCRIPTION, part.queue, spec, CREDIT_CHUNKS, properties)


def _chunks(client: StreamClient, part: StreamProtocolRangePartition) -> Iterator[Buffer]:
    """The chunks the range's subscription (``_subscribe``) is sent, until the caller stops
    (at the range's end), credit given back ``CREDIT_CHUNKS / 2`` chunks at a time.

    With a filter, the broker passes over the chunks whose Bloom filter cannot match and
    sends nothing for them, so silence cannot tell the range's end from a slow broker.
    What can: the broker sends a subscription's chunks while it handles the command that
    gave the credit, passing over unmatched chunks until its credit is spent or the
    stream's committed end is reached, and answers the next command on the connection
    only then (RabbitMQ's ``rabbit_stream_reader`` and ``osiris_log:send_file``; the
    bundled broker handles no command while chunks wait for its writer). So a
    ``StreamStats`` after the credit is answered after every chunk of that credit; if credit
    is left then (more than ``SEND_LIMIT``, below which RabbitMQ does not send), the broker
    reached the stream's end, which holds the range (``_await_committed``): the range is
    read. One round trip per credit given, none per message.
    """
    filtered = part.stream_filter is not None
    credit = _Credit(client)
    while True:
        if not filtered:
            delivery = client.next_delivery(part.poll_timeout * 10)
            if delivery is None:
                raise TimeoutError(
                    f"amqp source: stream queue {part.queue!r} stopped delivering before "
                    f"offset {part.end}, which ends the planned range [{part.start}, {part.end})"
                )
            credit.took()
            yield delivery.chunk
            continue
        marked = credit.granted
        client.stream_stats(part.queue)  # answered after the chunks sent before it
        while (delivery := client.next_delivery(0)) is not None:
            credit.took()
            yield delivery.chunk
        if marked - credit.received > SEND_LIMIT:
            return  # the broker passed over every chunk up to the stream's end


class _Credit:
    """A subscription's chunk credit, given back ``CREDIT_CHUNKS / 2`` at a time: after
    each ``took`` at least ``SEND_LIMIT + 1`` chunks are granted and not yet received."""

    def __init__(self, client: StreamClient) -> None:
        self._client = client
        self.granted, self.received = CREDIT_CHUNKS, 0

    def took(self) -> None:
        self.received += 1
        if self.received % (CREDIT_CHUNKS // 2) == 0:
            self._client.credit(_SUBSCRIPTION, CREDIT_CHUNKS // 2)
            self.granted += CREDIT_CHUNKS // 2


def _await_committed(client: StreamClient, part: StreamProtocolRangePartition) -> None:
    """Wait until the broker's member of the stream has committed the chunk holding the
    range's last offset (a replica may lag behind the node the driver asked), so that a
    filtered subscription made now reaches it (see ``_chunks``)."""
    bound = min(part.end - 1, part.committed_chunk_id)
    if bound < 0:
        return
    deadline = time.monotonic() + part.poll_timeout * 10
    while client.stream_stats(part.queue).get("committed_chunk_id", -1) < bound:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"amqp source: stream queue {part.queue!r} has not committed offset {bound} "
                f"of the planned range [{part.start}, {part.end}) on the node read"
            )
        time.sleep(_COMMITTED_POLL_SECONDS)


class _Rows:
    """Records gathered for one record batch (``StoredColumns``), and the bytes of the chunks
    they are in (held until ``take``); with a filter, only matching rows are taken."""

    def __init__(self, queue: str, wanted: StreamFilter | None) -> None:
        self.columns = StoredColumns(queue)
        self.size = 0
        self._wanted = wanted

    def add(self, records: list[memoryview], first_offset: int) -> None:
        self.columns.add(records, first_offset)

    @property
    def count(self) -> int:
        return len(self.columns)

    def take(self) -> pa.RecordBatch:
        """The record batch of everything added since the last ``take`` (that matches)."""
        columns = self.columns
        batch = stored_to_record_batch(columns)
        self.columns, self.size = StoredColumns(columns.queue), 0
        if self._wanted is None:
            return batch
        # Messages of one kind share their headers, so their filter value: one check a kind.
        keeps = [self._wanted.keeps_headers(fields[_HEADERS]) for fields in columns.fields]
        return batch.filter(pa.array(keeps, pa.bool_()).take(pa.array(columns.kinds)))


def _check_gap(
    client: StreamClient, part: StreamProtocolRangePartition, expected: int, came: int
) -> None:
    """A chunk after the offset expected: retention removed offsets of the range when the
    stream now begins past ``expected``; else the gap is offsets without messages (RabbitMQ's
    tracking chunks)."""
    first = client.stream_stats(part.queue).get("first_chunk_id", -1)
    if first > expected:
        lost(part.queue, expected, came, part.fail_on_data_loss)
