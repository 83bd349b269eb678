"""A stream queue (``x-queue-type=stream``) as RabbitMQ 4.0 runs one over AMQP 0-9-1.

Messages are appended to a ``SegmentedLog`` and never removed by consumers: each consumer
has its own cursor (the next offset it gets), starts where its ``x-stream-offset`` says,
and reads at its own pace. Acks, nacks and rejects only return credit (the consumer's
prefetch; RabbitMQ 3.10 closed the connection for a nack or reject); basic.get, purge,
no-ack consumers, global qos and the classic-queue arguments are refused with RabbitMQ's
errors. Like RabbitMQ, delivery goes a chunk at a time: when a
consumer has credit, the whole next chunk is delivered even if that overdraws its credit.

Publishes are buffered and appended as one chunk per batch (``flush``), which the server
calls before it sends the confirms of those publishes; a fallback timer flushes on the next
turn of the event loop otherwise. An appended chunk is written to the OS, so it survives a
kill -9 of the broker; when the broker has a data directory (``store.durable``) each flush
is also fdatasync'd before its confirms go, so it survives a power loss too.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from amqp_protocol import errors

from ..model.field_types import amqp_type_name
from ..model.message import Message, QueuedMessage
from ..model.queues import Consumer, Queue, QueueContext
from .amqp10_records import Amqp10Writer, legacy_chunk_records
from .chunk_filter import (
    FILTER_BYTES,
    FILTER_BYTES_RANGE,
    ConsumerFilter,
    InvalidFilter,
    chunk_filter,
    consumer_filter,
    filter_value_of,
)
from .delivery import OFFSET_HEADER, Amqp091Reader
from .legacy_log import LegacyChunk, holds_legacy_log, migrate
from .log import DEFAULT_MAX_SEGMENT_BYTES, SegmentedLog, now_ms
from .offset_spec import (
    CrashesRabbitMQ,
    InvalidInterval,
    InvalidOffsetSpec,
    OffsetSpec,
    interval_ms,
    parse_offset_spec,
)
from .tracking import Tracking

#: Records per chunk at most: a consumer's credit is overdrawn by less than this.
MAX_CHUNK_RECORDS = 128
#: RabbitMQ refuses a larger ``x-stream-max-segment-size-bytes``.
MAX_SEGMENT_BYTES_LIMIT = 3_000_000_000
#: The queue arguments RabbitMQ 3.10 knows; a stream accepts only ``_STREAM_ARGS`` of them.
_KNOWN_QUEUE_ARGS = frozenset(
    {
        "x-expires",
        "x-message-ttl",
        "x-dead-letter-exchange",
        "x-dead-letter-routing-key",
        "x-max-length",
        "x-max-length-bytes",
        "x-max-in-memory-length",
        "x-max-in-memory-bytes",
        "x-max-priority",
        "x-overflow",
        "x-queue-mode",
        "x-single-active-consumer",
        "x-queue-type",
        "x-quorum-initial-group-size",
        "x-delivery-limit",
        "x-max-age",
        "x-stream-max-segment-size-bytes",
        "x-initial-cluster-size",
        "x-queue-leader-locator",
    }
)
_STREAM_ARGS = frozenset(
    {
        "x-queue-type",
        "x-max-length-bytes",
        "x-max-age",
        "x-stream-max-segment-size-bytes",
        "x-initial-cluster-size",
        "x-queue-leader-locator",
    }
)


class StreamDirectories(Protocol):
    """What a store offers to keep streams under its data directory (optional)."""

    def stream_directory(self, vhost: str, queue: str) -> Path: ...


_scratch_root: Path | None = None


def _scratch_directory(vhost: str, queue: str) -> Path:
    """Where streams live when the broker has no data directory: a temporary folder for
    the life of the process (a stream is always on disk, as in RabbitMQ)."""
    global _scratch_root
    if _scratch_root is None:
        _scratch_root = Path(tempfile.mkdtemp(prefix="amqp-broker-streams-"))
        atexit.register(shutil.rmtree, _scratch_root, True)
    return _scratch_root / urllib.parse.quote(vhost, safe="") / urllib.parse.quote(queue, safe="")


def stream_directory(context: QueueContext, queue: str) -> Path:
    store: Any = context.store
    if hasattr(store, "stream_directory"):
        directory: Path = store.stream_directory(context.vhost, queue)
        return directory
    return _scratch_directory(context.vhost, queue)


class StreamSettings:
    """The declare arguments of a stream, checked in RabbitMQ's order with its texts."""

    def __init__(self, queue: str, vhost: str, args: dict[str, Any]) -> None:
        where = f"for queue '{queue}' in vhost '{vhost}'"
        for name in args:
            if name in _KNOWN_QUEUE_ARGS and name not in _STREAM_ARGS:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg '{name}' {where} of queue type "
                    "rabbit_stream_queue"
                )
        self.max_bytes = self._size(where, args, "x-max-length-bytes")
        self.max_segment_bytes = self._size(where, args, "x-stream-max-segment-size-bytes")
        if self.max_segment_bytes is not None and self.max_segment_bytes > MAX_SEGMENT_BYTES_LIMIT:
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - Exceeded max value for x-stream-max-segment-size-bytes"
            )
        self.filter_bytes = args.get("x-stream-filter-size-bytes", FILTER_BYTES)
        size = self.filter_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size not in FILTER_BYTES_RANGE:
            # (sic: two spaces, as RabbitMQ 4.0.5 answers)
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - Invalid value for  x-stream-filter-size-bytes"
            )
        self.max_age_ms: int | None = None
        max_age = args.get("x-max-age")
        if max_age is not None:
            if not isinstance(max_age, str):
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg 'x-max-age' {where}: "
                    f"{{unacceptable_type,{amqp_type_name(max_age)}}}"
                )
            try:
                self.max_age_ms = interval_ms(max_age)
            except InvalidInterval:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg 'x-max-age' {where}: invalid_max_age"
                ) from None
            except CrashesRabbitMQ:
                raise errors.InternalError("INTERNAL_ERROR") from None

    @staticmethod
    def _size(where: str, args: dict[str, Any], name: str) -> int | None:
        value = args.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - invalid arg '{name}' {where}: "
                f'"expected integer, got {amqp_type_name(value)}"'
            )
        if value < 0:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - invalid arg '{name}' {where}: {{value_negative,{value}}}"
            )
        return value


class StreamQueue(Queue):
    """A durable stream queue; the factory registered as queue type ``stream``."""

    type_name = "stream"
    buffers_publishes = True

    def __init__(
        self,
        context: QueueContext,
        name: str,
        *,
        durable: bool = False,
        owner: object | None = None,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        args = dict(arguments or {})
        self.stream_settings = StreamSettings(name, context.vhost, args)
        where = f"for queue '{name}' in vhost '{context.vhost}'"
        # The virtual host has already refused user-chosen "amq." names: this one is generated.
        if name.startswith("amq.gen-"):
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - Cannot declare a server-named queue for type "
                "rabbit_stream_queue"
            )
        for refused, prop in ((auto_delete, "auto-delete"), (owner is not None, "exclusive-owner")):
            if refused:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid property '{prop}' {where}"
                )
        if not durable:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - invalid property 'non-durable' {where}"
            )
        super().__init__(context, name, durable=True)
        self.arguments = args
        s = self.stream_settings
        self.directory = stream_directory(context, name)
        log_options: dict[str, Any] = {"max_bytes": s.max_bytes, "max_age_ms": s.max_age_ms}
        if s.max_segment_bytes is not None:
            log_options["max_segment_bytes"] = s.max_segment_bytes
        if holds_legacy_log(self.directory):
            migrate(self.directory, self._legacy_records, **log_options)
        self.log = SegmentedLog(self.directory, **log_options)
        self._writer = Amqp10Writer()
        self._reader = Amqp091Reader(name)
        self._pending: list[bytes] = []  #: AMQP 1.0 messages
        self._pending_filter_values: list[str] = []  #: x-stream-filter-value of each
        self._cursors: dict[Consumer, int] = {}
        self._filters: dict[Consumer, ConsumerFilter] = {}
        #: publisher sequences and stored consumer offsets (the stream protocol's)
        self.tracking = Tracking(self.directory)
        #: called after each flush that appended and when the stream is deleted (readers
        #: outside the 0-9-1 consumers: the stream protocol's subscriptions)
        self.watchers: list[Callable[[], None]] = []

    def _legacy_records(self, chunk: LegacyChunk) -> tuple[list[bytes], bytes]:
        return legacy_chunk_records(chunk, self.stream_settings.filter_bytes)

    def apply_arguments(self, arguments: dict[str, Any]) -> None:
        """Retention and segment size as the effective policy makes them (a stream's policy
        wins over its arguments, RabbitMQ 4.0): the log applies them from its next write."""
        s = self.stream_settings = StreamSettings(self.name, self.context.vhost, arguments)
        self.log.max_bytes, self.log.max_age_ms = s.max_bytes, s.max_age_ms
        self.log.max_segment_bytes = s.max_segment_bytes or DEFAULT_MAX_SEGMENT_BYTES

    @property
    def _where(self) -> str:
        return f"queue '{self.name}' in vhost '{self.context.vhost}'"

    def _not_supported(self, what: str) -> errors.AMQPError:
        return errors.NotImplemented_(
            f"NOT_IMPLEMENTED - {what} not supported by stream queues {self._where}"
        )

    @property
    def message_count(self) -> int:
        """The messages in the log (RabbitMQ reports the same figure, refreshed every few
        seconds; here it is exact)."""
        return self.log.next_offset + len(self._pending) - self.log.first_offset

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, message: Message) -> bool:
        try:
            filter_value = filter_value_of(message.headers)
        except InvalidFilter:
            raise errors.InternalError("INTERNAL_ERROR") from None  # as RabbitMQ 4.0 does
        self.append_message(message, filter_value)
        return True

    def append_message(self, message: Message, filter_value: str = "") -> None:
        """Buffer the AMQP 1.0 form of the 0-9-1 ``message`` (tagged with ``filter_value``
        for stream filtering) for the next flush."""
        self.append_record(self._writer.encode(message), filter_value)

    def append_record(self, record: bytes, filter_value: str = "") -> None:
        """Buffer ``record`` (an AMQP 1.0 message, as a stream client published it) for
        the next flush."""
        if not self._pending:
            self.context.clock.call_later(0, self.flush)
        self._pending.append(record)
        self._pending_filter_values.append(filter_value)

    def flush(self) -> None:
        """Append the buffered publishes to the log, then deliver them. The server calls it
        before confirming those publishes."""
        if not self._pending or self.deleted:
            return
        pending, self._pending = self._pending, []
        values, self._pending_filter_values = self._pending_filter_values, []
        for start in range(0, len(pending), MAX_CHUNK_RECORDS):
            end = start + MAX_CHUNK_RECORDS
            chunk_values = values[start:end]
            # As Osiris: a bloom filter only in a chunk where a message has a filter value.
            filter_bytes = (
                chunk_filter(chunk_values, self.stream_settings.filter_bytes)
                if any(chunk_values)
                else b""
            )
            self.log.append(pending[start:end], filter_bytes=filter_bytes)
        durable = self.context.store.durable
        if durable:
            self.log.sync_data()
        self.tracking.save(durable)
        if self.consumers:
            self.dispatch()
        for watcher in list(self.watchers):
            watcher()

    # -- consumers ----------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer, arguments: dict[str, Any] | None = None) -> None:
        """Register a consumer starting where ``arguments["x-stream-offset"]`` says."""
        if consumer.priority:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - invalid arg 'x-priority' for {self._where} of queue type "
                "rabbit_stream_queue"
            )
        # RabbitMQ 4.0's texts (3.10: "... not supported by stream queues queue 'q' ..." and
        # "... is not set for 'queue 'q' in vhost '/''").
        if consumer.no_ack:
            raise errors.NotImplemented_(
                f"NOT_IMPLEMENTED - automatic acknowledgement not supported by stream {self._where}"
            )
        if not consumer.prefetch:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - consumer prefetch count is not set for stream {self._where}"
            )
        # The channel-wide (global) prefetch lives on the channel, the consumer's sink.
        if getattr(consumer.sink, "channel_prefetch", 0):
            raise errors.NotImplemented_(
                f"NOT_IMPLEMENTED - {self._where} does not support global qos"
            )
        spec = self._offset_spec((arguments or {}).get(OFFSET_HEADER))
        try:
            wanted = consumer_filter(arguments or {})
        except InvalidFilter:
            raise errors.InternalError("INTERNAL_ERROR") from None  # as RabbitMQ 4.0 does
        super().add_consumer(consumer)
        self.flush()
        self._cursors[consumer] = self.start_offset(spec)
        if wanted is not None:
            self._filters[consumer] = wanted

    def _offset_spec(self, value: Any) -> OffsetSpec:
        try:
            return parse_offset_spec(value, now_ms())
        except InvalidOffsetSpec as e:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - invalid arg 'x-stream-offset' for {self._where}: "
                f"{{invalid_stream_offset_arg,{e.term}}}"
            ) from None
        except CrashesRabbitMQ:
            raise errors.InternalError("INTERNAL_ERROR") from None

    def start_offset(self, spec: OffsetSpec) -> int:
        """The first offset a consumer attached with ``spec`` gets."""
        log = self.log
        if spec.kind == "first":
            return log.first_offset
        if spec.kind == "last":
            last = log.last_chunk_offset
            return log.next_offset if last is None else last
        if spec.kind == "timestamp":
            return log.offset_for_timestamp(spec.value)
        if spec.kind == "offset":
            return max(spec.value, log.first_offset)
        return log.next_offset

    def remove_consumer(self, consumer: Consumer) -> None:
        self._cursors.pop(consumer, None)
        self._filters.pop(consumer, None)
        super().remove_consumer(consumer)

    def _deliver(self) -> None:
        """To each consumer that has credit, a whole chunk at a time, from its cursor;
        a filtered consumer's cursor passes the chunks its filter cannot match unread."""
        log = self.log
        for consumer in self.consumers:
            sink = consumer.sink
            cursor = self._cursors[consumer]
            wanted = self._filters.get(consumer)
            while cursor < log.next_offset and sink.can_deliver(consumer):
                if wanted is not None:
                    cursor = max(cursor, log.first_offset)  # retention may have passed it
                    filter_bytes, after = log.chunk_filter(cursor)
                    if not wanted.matches_chunk(filter_bytes):
                        cursor = after
                        continue
                chunk = log.read_chunk(cursor)
                for delivery in self._reader.deliveries(chunk, sink):
                    sink.deliver(consumer, self, delivery)
                cursor = chunk[-1].offset + 1
            self._cursors[consumer] = cursor

    # -- what a stream refuses or ignores -----------------------------------------------------

    def get(self) -> QueuedMessage | None:
        raise self._not_supported("basic.get")

    def settle(self, entry: QueuedMessage) -> None:
        """An ack returns credit (the channel does that); the message stays in the log."""

    def requeue(self, entries: list[QueuedMessage]) -> None:
        """A nack or reject with requeue settles as an ack does, nothing redelivered (as
        RabbitMQ 4.0 does; a closing channel requeues too)."""

    def reject(self, entry: QueuedMessage) -> None:
        """A nack or reject without requeue: as an ack (a stream has no dead-lettering)."""

    def purge(self) -> int:
        raise self._not_supported("queue.purge")

    def expire(self) -> None:
        """Streams have no per-message TTL; retention is by segment (``x-max-age``)."""

    # -- life cycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Write what is buffered and close the log (broker shutdown)."""
        self.flush()
        self.tracking.save(self.context.store.durable)
        self.log.close()

    def store_offset(self, reference: str, offset: int) -> None:
        """A consumer's offset stored under ``reference`` (written at once)."""
        self.tracking.store_offset(reference, offset)
        self.tracking.save(self.context.store.durable)

    def destroy(self) -> list[Consumer]:
        """queue.delete: the log goes with the queue."""
        self.deleted = True
        for watcher in list(self.watchers):
            watcher()
        self._pending.clear()
        self._pending_filter_values.clear()
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        consumers, self.consumers = self.consumers, []
        self._cursors.clear()
        self._filters.clear()
        return consumers
