"""The driver-side consumers of classic queues, held by the streaming source's runner.

Classic queues are consumed destructively, so the only way to give Spark a replayable batch
is to hold the messages, unacked, until Spark has committed the batch. The runner process
lives as long as the query run and calls every ``DataSourceStreamReader`` method, so it
holds one connection with one channel per queue (delivery tags are per channel, so a batch
is a prefix of each queue's deliveries) and a buffer of what has arrived:

* ``latest`` answers from the buffer — no network round trip;
* ``batch`` returns the buffered deliveries of a planned range (the same ones every time
  it is asked in the same run);
* ``ack_through`` acks, per channel, up to the committed tag with ``multiple=true`` and
  drops those deliveries. Tags are only acked on the connection they came from: an offset
  names its connection, and tags of a dead connection are left to the broker, which
  requeues them and delivers them again (at-least-once).

Unacked messages never exceed ``prefetch`` per queue, which bounds the driver's memory.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from amqp_spark.offsets import ClassicOffset
from amqp_spark.source.connecting import connect_with_retry
from amqp_spark.source.options import SourceOptions

if TYPE_CHECKING:
    from amqp_spark.client import Channel, Connection, Delivery

#: How often ``waiting()`` may ask the broker for queue depths (a round trip each).
DEPTH_REFRESH_SECONDS = 1.0
#: Longest single block on one channel while waiting for deliveries.
_WAIT_SLICE = 0.05


@dataclass(frozen=True)
class Limits:
    """How much one batch may take; None = unbounded."""

    max_rows: int | None = None
    max_bytes: int | None = None


class ClassicConsumers:
    """One connection consuming every queue of the query, with what has arrived unacked."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._lock = threading.RLock()  # SIGTERM's close() may interrupt any method
        self._conn: Connection | None = None
        self._channels: dict[str, Channel] = {}
        self.connection_id = ""
        self.queues: tuple[str, ...] = ()
        #: (queue, delivery) in arrival order; per queue a prefix of that channel's tags.
        self._arrived: list[tuple[str, Delivery]] = []
        self._acked: dict[str, int] = {}
        #: AvailableNow: admit only what the queues held when consuming started.
        self._available_now = False
        #: With AvailableNow, per queue, how many deliveries may be admitted on this connection.
        self._budget: dict[str, int] | None = None
        self._admitted: dict[str, int] = {}
        self._depths: dict[str, int] = {}
        self._depths_at = 0.0

    # -- connection ---------------------------------------------------------------------------

    def ensure_open(self) -> None:
        """Connect and start consuming unless already consuming on a live connection.

        A dead connection is replaced (bounded retries): its buffered deliveries are dropped
        (the broker requeues them) and the new connection gets a new id, so no tag of the
        old one is ever acked on it.
        """
        with self._lock:
            if self._conn is not None and self._conn.is_open:
                return
            self._drop_connection()
            opts = self._options
            conn = connect_with_retry(opts.uri, opts.max_reconnect_attempts, "stream consumer")
            try:
                queues = opts.queues or (self._declare_bound_queue(conn),)
                channels = {}
                for queue in queues:
                    ch = conn.channel()
                    ch.basic_qos(prefetch_count=opts.prefetch)
                    channels[queue] = ch
                if self._available_now:
                    self._budget = {q: self._depth(channels[q], q) for q in queues}
                for queue, ch in channels.items():
                    ch.basic_consume(queue, no_ack=False)
            except BaseException:
                conn.close()
                raise
            self._conn, self._channels, self.queues = conn, channels, queues
            self.connection_id = uuid.uuid4().hex
            self._acked = dict.fromkeys(queues, 0)
            self._admitted = dict.fromkeys(queues, 0)

    def _declare_bound_queue(self, conn: Connection) -> str:
        """A server-named, exclusive queue bound to ``exchange`` for this connection."""
        opts = self._options
        assert opts.exchange is not None
        ch = conn.channel()
        queue = ch.queue_declare("", exclusive=True, auto_delete=True).queue
        for key in opts.binding_keys:
            ch.queue_bind(queue, opts.exchange, routing_key=key)
        ch.close()
        return queue

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        self._channels, self._arrived = {}, []
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close the connection cleanly (the broker requeues what was not acked)."""
        with self._lock:
            self._drop_connection()

    # -- AvailableNow -------------------------------------------------------------------------

    def limit_to_current_depth(self) -> None:
        """From now on admit, per queue, only as many deliveries as it holds when consuming
        starts (a consumer already running is restarted; the broker requeues its messages)."""
        with self._lock:
            self._available_now = True
            self._drop_connection()

    @staticmethod
    def _depth(ch: Channel, queue: str) -> int:
        return int(ch.queue_declare(queue, passive=True).message_count)

    def _admissible(self, queue: str) -> bool:
        return self._budget is None or self._admitted[queue] < self._budget.get(queue, 0)

    # -- receiving ----------------------------------------------------------------------------

    def _receive(self) -> int:
        """Move what has arrived on every channel into the buffer; never blocks."""
        from amqp_spark.client import ClientError

        count = 0
        try:
            for queue, ch in self._channels.items():
                while self._admissible(queue):
                    batch = ch.drain_deliveries(max_count=1000)
                    if self._budget is not None:
                        batch = batch[: self._budget.get(queue, 0) - self._admitted[queue]]
                    self._arrived.extend((queue, d) for d in batch)
                    self._admitted[queue] += len(batch)
                    count += len(batch)
                    if len(batch) < 1000:
                        break
        except ClientError:
            self._drop_connection()  # reconnected by the caller's next ensure_open()
        return count

    def _wait_for_more(self, wanted: int, timeout: float) -> None:
        """Block until ``wanted`` deliveries are buffered, nothing more can come (the
        AvailableNow target is reached, or every queue has ``prefetch`` unacked), or
        nothing arrived for ``timeout`` seconds."""
        idle_since = time.monotonic()
        for _ in range(int(600 / _WAIT_SLICE)):  # a hard bound; the idle timeout ends it first
            if self._receive():
                idle_since = time.monotonic()
            waiting_on = self._queues_that_can_deliver()
            if self._conn is None or len(self._arrived) >= wanted or not waiting_on:
                return
            if time.monotonic() - idle_since >= timeout:
                if not self._broker_still_has(waiting_on):
                    return
                idle_since = time.monotonic()  # a slow broker, not an empty queue
            queue = waiting_on[0]
            d = self._channels[queue].next_delivery(timeout=_WAIT_SLICE)
            if d is not None:
                self._arrived.append((queue, d))
                self._admitted[queue] += 1

    def _broker_still_has(self, queues: list[str]) -> bool:
        """AvailableNow: whether one of ``queues`` still has ready messages for us, so that
        a silence is the broker being slow (paging a long queue in), not the end. Without a
        budget (once runs), a silence is the end."""
        from amqp_spark.client import ClientError

        if self._budget is None or self._conn is None:
            return False
        try:
            ch = self._conn.channel()
            ready = any(self._depth(ch, q) for q in queues)
            ch.close()
        except ClientError:
            return False
        return ready

    def _queues_that_can_deliver(self) -> list[str]:
        """Queues the broker may still send to us: within the AvailableNow budget and with
        fewer than ``prefetch`` unacked (every buffered delivery is unacked)."""
        unacked = dict.fromkeys(self.queues, 0)
        for queue, _ in self._arrived:
            unacked[queue] += 1
        return [
            q for q in self.queues if self._admissible(q) and unacked[q] < self._options.prefetch
        ]

    # -- offsets ------------------------------------------------------------------------------

    def start_offset(self) -> ClassicOffset:
        with self._lock:
            self.ensure_open()
            return ClassicOffset(self.connection_id, dict.fromkeys(self.queues, 0))

    def latest(self, start: ClassicOffset, limits: Limits, wait: bool) -> ClassicOffset:
        """The end of the next batch after ``start``, from what has arrived.

        With ``wait`` (AvailableNow and once runs), first wait (bounded) for deliveries
        still on their way, so that the run does not end while the queue still has messages.
        """
        with self._lock:
            self.ensure_open()
            # Without a row limit, take half of what may be in flight: the broker then keeps
            # sending the other half while Spark processes the batch.
            rows = limits.max_rows or max(1, self._options.prefetch // 2) * len(self.queues)
            if wait:
                # After ack_through(start), every buffered delivery is beyond `start`.
                self._wait_for_more(rows, self._options.poll_timeout)
            else:
                self._receive()
            self.ensure_open()  # a connection that died while receiving is replaced
            tags = {q: start.tag(q, self.connection_id) for q in self.queues}
            taken = size = 0
            for queue, d in self._arrived:
                if d.delivery_tag <= tags[queue]:
                    continue
                size += len(d.body)
                if taken and (
                    taken >= rows or (limits.max_bytes is not None and size > limits.max_bytes)
                ):
                    break
                taken += 1
                tags[queue] = d.delivery_tag
            return ClassicOffset(self.connection_id, tags)

    def batch(self, start: ClassicOffset, end: ClassicOffset) -> Iterator[tuple[str, Delivery]]:
        """The buffered deliveries in (start, end], in arrival order. Empty when ``end``
        belongs to an earlier connection: the broker redelivers those messages."""
        with self._lock:
            if end.connection != self.connection_id:
                return iter(())
            return iter(
                [
                    (q, d)
                    for q, d in self._arrived
                    if start.tag(q, self.connection_id)
                    < d.delivery_tag
                    <= end.tag(q, end.connection)
                ]
            )

    def ack_through(self, end: ClassicOffset) -> None:
        """Ack every delivery up to ``end`` on its channel (multiple=true) and forget them.
        Does nothing for an offset of another connection."""
        from amqp_spark.client import ClientError

        with self._lock:
            if self._conn is None or end.connection != self.connection_id:
                return
            try:
                for queue, ch in self._channels.items():
                    tag = end.tag(queue, self.connection_id)
                    if tag > self._acked[queue]:
                        ch.basic_ack(tag, multiple=True)
                        self._acked[queue] = tag
            except ClientError:
                self._drop_connection()  # unacked: the broker requeues them
                return
            self._arrived = [(q, d) for q, d in self._arrived if d.delivery_tag > self._acked[q]]

    # -- reporting ----------------------------------------------------------------------------

    def waiting(self) -> dict[str, dict[str, int]]:
        """Per queue, messages ready on the broker (asked at most once a second, so up to a
        second old) and messages received but not yet acked (in a batch or waiting for one)."""
        from amqp_spark.client import ClientError

        with self._lock:
            now = time.monotonic()
            if self._conn is not None and now - self._depths_at >= DEPTH_REFRESH_SECONDS:
                self._depths_at = now
                try:
                    ch = self._conn.channel()
                    self._depths = {q: self._depth(ch, q) for q in self.queues}
                    ch.close()
                except ClientError:
                    pass  # reported from the last good answer; consuming is unaffected
            unacked = dict.fromkeys(self.queues, 0)
            for queue, _ in self._arrived:
                unacked[queue] += 1
            return {
                q: {"ready": self._depths.get(q, 0), "unacked": unacked[q]} for q in self.queues
            }
