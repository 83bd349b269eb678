"""The driver-side consumers of classic queues, held by the streaming source's runner.

Classic queues are consumed destructively, so the only way to give Spark a replayable batch
is to hold the messages, unacked, until Spark has committed the batch. The runner process
lives as long as the query run and calls every ``DataSourceStreamReader`` method, so it
holds one connection with one channel per queue (delivery tags are per channel, so a batch
is a prefix of each queue's deliveries) and, per queue, a buffer of what has arrived:

* ``latest`` answers from the buffers — no network round trip;
* ``batch`` returns the buffered deliveries of a planned range (the same ones every time
  it is asked in the same run);
* ``ack_through`` acks, per channel, up to the committed tag with ``multiple=true`` and
  drops those deliveries. Tags are only acked on the connection they came from: an offset
  names its connection, and tags of a dead connection are left to the broker, which
  requeues them and delivers them again (at-least-once).

Unacked messages never exceed ``prefetch`` per queue (rounded up to a multiple of the number of
consumers when it takes several), which bounds the driver's memory. Without ``prefetch``, the
window of each queue is chosen from the body sizes seen, in count and bytes (see ``window``).

This runs in the same process as the client's I/O thread, which reads the deliveries and
needs the GIL to do so. The channels hand them over as columns (``deliver_as_columns``: tags,
bodies and kinds, no object per delivery; see ``held``), so nothing here costs a Python step
per message (buffers are per queue and in tag order, so ranges are found by bisection), and
waiting for deliveries sleeps in slices rather than waking up for each one.
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from amqp_spark.source.classic.delivery_limit import warn_about_delivery_limit
from amqp_spark.source.classic.held import HeldDeliveries
from amqp_spark.source.classic.window import DefaultWindow, window_messages_for
from amqp_spark.source.connecting import open_with_retry, using_queue
from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import ClassicOffset
from amqp_spark.source.options import CONSUMER_PREFETCH_MAX, SourceOptions

if TYPE_CHECKING:
    from amqp_protocol.events import DeliveryColumns
    from amqp_spark.client import Channel, Connection
    from amqp_spark.client.channel import PendingReply

#: How often ``waiting()`` may ask the broker for queue depths.
DEPTH_REFRESH_SECONDS = 1.0
#: How long the drain loop sleeps while deliveries are streaming in: long enough that the
#: I/O thread decodes hundreds of them undisturbed, short next to a batch's duration.
DRAIN_SLICE = 0.01
#: Longest single block on one channel while waiting for the first delivery after a silence.
_WAIT_SLICE = 0.05
#: A hard bound of one wait for deliveries, in seconds and in drain rounds.
_WAIT_BOUND = 600.0
#: Deliveries taken from the client in one lock round.
_DRAIN_MAX = 65535


def _spare_full_collections() -> None:
    """Make Python's full garbage collections rarer in this process.

    The runner holds up to ``prefetch`` deliveries per queue, each a few tracked objects
    that live until their batch is acked; every full collection walks all of them. Measured
    (1M rows, bundled broker, load 4.5-6): the runner spent about a quarter of its CPU in
    the collector, 10.9-13.5 CPU-s per million rows with the default thresholds, 8.8-9.5 with
    the third one at 1000 (9.3 with the collector off). Deliveries hold no cycles, so
    nothing waits longer to be freed."""
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(gen0, gen1, 1000)


@dataclass
class _Consumer:
    """One queue's channel and its deliveries received but not yet acked, in tag order."""

    channel: Channel
    #: AvailableNow: how many deliveries may be admitted on this connection (None: any).
    budget: int | None = None
    admitted: int = 0
    acked: int = 0  #: the last tag acked
    arrived: HeldDeliveries = field(default_factory=HeldDeliveries)
    redelivered: int = 0  #: deliveries marked redelivered (returns: see delivery_limit)
    #: The AMQP consumers on the channel as (consumer tag, prefetch), oldest first; their
    #: prefetches sum to how many deliveries they may have unacked (besides, those of
    #: consumers a step of the default window cancelled wait for their batch's ack).
    tags_and_prefetches: list[tuple[str, int]] = field(default_factory=list)
    #: What consumers replaced by a step of the default window may still have unacked (the
    #: sum of their prefetches), until every delivery up to ``retired_through`` is acked;
    #: None while their cancel-oks are on the way (their deliveries come before those).
    retired: int = 0
    retired_through: int | None = None
    seen_bytes: int = 0  #: body bytes of every delivery admitted
    held_bytes: int = 0  #: body bytes of ``arrived``
    #: Replies to a growth step (basic.qos, basic.consume) still on their way.
    growing: list[PendingReply] = field(default_factory=list)

    def take(self, runs: list[DeliveryColumns]) -> int:
        """Hold the deliveries of ``runs``; returns how many."""
        count = 0
        for run in runs:
            redelivered, size = self.arrived.add(run)
            count += len(run)
            self.redelivered += redelivered
            self.seen_bytes += size
            self.held_bytes += size
        self.admitted += count
        return count

    def consume(self, queue: str, prefetch: int) -> None:
        """Add an AMQP consumer of ``prefetch`` on the channel, waiting for the broker."""
        if not self.tags_and_prefetches:
            self.channel.deliver_as_columns()
        self.channel.basic_qos(prefetch_count=prefetch)
        self.tags_and_prefetches.append((self.channel.basic_consume(queue, no_ack=False), prefetch))

    @property
    def window(self) -> int:
        """How many deliveries the live consumers may have unacked: their prefetches."""
        return sum(p for _, p in self.tags_and_prefetches)

    def step(self, queue: str, prefetch: int, replaced: list[tuple[str, int]]) -> None:
        """One step of the default window: add a consumer of ``prefetch``, then cancel the
        consumers ``replaced`` (their deliveries stay unacked on the channel until their
        batch is acked, but no more come to them). Sent without waiting: the replies would
        come behind the deliveries in flight. The window counts the new consumer at once."""
        tag = f"amqp-spark-{uuid.uuid4().hex}"
        self.growing = [
            self.channel.request_later("basic.qos", prefetch_count=prefetch, global_=False),
            self.channel.request_later("basic.consume", queue=queue, consumer_tag=tag),
            *(self.channel.request_later("basic.cancel", consumer_tag=t) for t, _ in replaced),
        ]
        kept = [c for c in self.tags_and_prefetches if c not in replaced]
        self.tags_and_prefetches = [*kept, (tag, prefetch)]
        if replaced:
            self.retired += sum(p for _, p in replaced)
            self.retired_through = None

    def settled(self) -> bool:
        """Whether the last step was answered (raises if it was refused)."""
        return all(reply.result() is not None for reply in self.growing)

    def retire_through_last(self) -> None:
        """Once the step that replaced consumers was answered and the channel drained after
        that: their deliveries came before the answers, so none is past the last one held."""
        if self.retired and self.retired_through is None:
            if self.arrived:
                self.retired_through = self.arrived.tag_at(len(self.arrived) - 1)
            else:
                self.retired = 0  # nothing held: theirs are acked already

    def ack(self, tag: int) -> None:
        """Ack every delivery up to ``tag`` (multiple=true) and forget them."""
        self.channel.basic_ack(tag, multiple=True)
        self.acked = tag
        self.held_bytes -= self.arrived.drop(self.after(tag))
        if self.retired_through is not None and tag >= self.retired_through:
            self.retired = 0

    def partial(self) -> list[tuple[str, int]]:
        """The consumers smaller than one consumer's largest window, which a step of growth
        replaces (see ``window``)."""
        return [c for c in self.tags_and_prefetches if c[1] < CONSUMER_PREFETCH_MAX]

    def average_body(self) -> float:
        """The body size the window is sized for: the average of all seen, or of those held
        if larger (a window cancelled because messages grew does not grow back while they
        are large)."""
        seen = self.seen_bytes / self.admitted if self.admitted else 0.0
        return max(seen, self.held_bytes / len(self.arrived) if self.arrived else 0.0)

    def room(self) -> int:
        """How many more deliveries may be admitted (the AvailableNow budget)."""
        return _DRAIN_MAX if self.budget is None else self.budget - self.admitted

    def after(self, tag: int) -> int:
        """The index of the first buffered delivery with a tag above ``tag``."""
        return self.arrived.after(tag)


class ClassicConsumers:
    """One connection consuming every queue of the query, with what has arrived unacked."""

    def __init__(self, options: SourceOptions) -> None:
        _spare_full_collections()
        self._options = options
        self._lock = threading.RLock()  # SIGTERM's close() may interrupt any method
        self._conn: Connection | None = None
        self._consumers: dict[str, _Consumer] = {}
        self.connection_id = ""
        self.queues: tuple[str, ...] = ()
        #: AvailableNow: admit only what the queues held when consuming started.
        self._available_now = False
        #: Per queue, its ready count at the broker's last answer, and the questions asked.
        self._depths: dict[str, int] = {}
        self._depths_at = 0.0
        self._depth_channel: Channel | None = None
        self._depth_questions: dict[str, PendingReply] = {}
        self._warned = False  #: about quorum queues' delivery limit (once a run)
        self._redelivered: dict[str, int] = {}  #: per queue, on connections closed before
        # One consumer may have at most CONSUMER_PREFETCH_MAX unacked: a larger window is
        # shared by several consumers on the queue's channel. Their deliveries share the
        # channel's tags, so a batch is still a prefix of one sequence and one ack covers it.
        consumers_per_queue = -(-options.prefetch // CONSUMER_PREFETCH_MAX)
        share = -(-options.prefetch // consumers_per_queue)
        #: ``prefetch`` given: the consumers' prefetch, all started at once. Else each queue
        #: starts with one consumer of one message and grows (see ``window``).
        self._fixed = [share] * consumers_per_queue if "prefetch" in options.given else None
        #: Without ``prefetch``: the window's policy, chosen at the first connection from the
        #: broker's ``product`` (see ``window``).
        self._default_window: DefaultWindow | None = None

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
            conn, (queues, depth_channel, consumers) = open_with_retry(
                opts.uri, opts.max_reconnect_attempts, "stream consumer", self._start_consuming
            )
            self._conn, self._consumers, self.queues = conn, consumers, queues
            self._depth_channel, self._depths_at = depth_channel, 0.0
            self.connection_id = uuid.uuid4().hex
            if self._default_window is None:
                self._default_window = DefaultWindow.for_queues(
                    len(opts.queues) or 1, window_messages_for(conn.server_properties)
                )
            self._ask_depths()  # now, so that the first progress report has an answer
            if opts.queue_type == "quorum" and not self._warned:
                self._warned = True
                warn_about_delivery_limit(queues, conn.server_properties)

    def _start_consuming(
        self, conn: Connection
    ) -> tuple[tuple[str, ...], Channel, dict[str, _Consumer]]:
        """The queues, the channel asking their depths, and their consumers, on ``conn``."""
        opts = self._options
        queues = opts.queues or (self._declare_bound_queue(conn),)
        # Opened before the deliveries stream in: its open-ok would wait behind them.
        depth_channel = conn.channel()
        consumers = {}
        for queue in queues:
            with using_queue(queue, opts.queue_type):
                ch = conn.channel()
                budget = self._depth(ch, queue) if self._available_now else None
                consumers[queue] = _Consumer(ch, budget)
        for queue, consumer in consumers.items():
            with using_queue(queue, opts.queue_type):
                for prefetch in self._fixed or [1]:
                    consumer.consume(queue, prefetch)
        return queues, depth_channel, consumers

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
        for queue, consumer in self._consumers.items():
            self._redelivered[queue] = self._redelivered.get(queue, 0) + consumer.redelivered
        conn, self._conn = self._conn, None
        self._consumers = {}
        self._depth_channel, self._depth_questions = None, {}
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

    # -- receiving ----------------------------------------------------------------------------

    def _receive(self) -> int:
        """Move what has arrived on every channel into the buffers; never blocks."""
        from amqp_spark.client import ClientError

        count = 0
        try:
            for queue, consumer in self._consumers.items():
                # Asked before draining: once the step's answers are in, so is every
                # delivery that came before them.
                settled = self._fixed is None and consumer.settled()
                room = consumer.room()
                if room > 0:
                    count += consumer.take(consumer.channel.drain_columns(room))
                if settled:
                    self._adapt_window(queue, consumer)
        except ClientError:
            self._drop_connection()  # reconnected by the caller's next ensure_open()
        return count

    def _adapt_window(self, queue: str, consumer: _Consumer) -> None:
        """The default window: one step of growth or shrinking (see ``window``), called once
        the step before was answered and the channel drained after that."""
        consumer.retire_through_last()
        policy = self._default_window
        assert policy is not None  # chosen when the connection opened
        if policy.over_budget(consumer.held_bytes, len(consumer.arrived)):
            if consumer.window > 1:  # down to one consumer of one message
                consumer.step(queue, 1, consumer.tags_and_prefetches)
            return  # no growth while over: what comes would be held beyond the budget
        average, retired = consumer.average_body(), consumer.retired
        window = policy.next_window(consumer.window, consumer.admitted, average, retired)
        if window <= consumer.window:
            return
        replaced = consumer.partial()
        replaced_window = sum(p for _, p in replaced)
        if not policy.may_replace(retired, replaced_window, window, average):
            replaced, replaced_window = [], 0  # add to the window instead
        kept = consumer.window - replaced_window
        consumer.step(queue, min(window - kept, CONSUMER_PREFETCH_MAX), replaced)

    def _buffered(self) -> int:
        return sum(len(c.arrived) for c in self._consumers.values())

    def _wait_for_more(self, wanted: int | None, timeout: float) -> None:
        """Block until ``wanted`` deliveries (None: half the windows, which may grow while
        waiting) are buffered, nothing more can come (the
        AvailableNow target is reached, or every queue has its window unacked), or
        nothing arrived for ``timeout`` seconds.

        While deliveries stream in, sleep between drains (the I/O thread has the GIL to
        itself); after a silence, block on a channel so the first delivery ends the wait.
        A connection lost meanwhile is replaced (the next node of ``addresses``) and the
        wait goes on there: what the lost one held comes again, and an AvailableNow run
        must not end before it has.
        """
        from amqp_spark.client import ClientError

        idle_since = time.monotonic()
        deadline = idle_since + _WAIT_BOUND
        for _ in range(int(_WAIT_BOUND / DRAIN_SLICE)):  # the idle timeout ends it first
            if self._conn is None:
                self.ensure_open()
                idle_since = time.monotonic()
            streaming = self._receive() > 0
            if self._conn is None:
                continue
            if streaming:
                idle_since = time.monotonic()
            waiting_on = self._queues_that_can_deliver()
            if (
                self._buffered() >= (wanted or self.half_windows())
                or not waiting_on
                or time.monotonic() > deadline
            ):
                return
            if time.monotonic() - idle_since >= timeout:
                if not self._broker_still_has(waiting_on):
                    return
                idle_since = time.monotonic()  # a slow broker, not an empty queue
            if streaming:
                time.sleep(DRAIN_SLICE)
                continue
            consumer = self._consumers[waiting_on[0]]
            try:
                runs = consumer.channel.next_columns(_WAIT_SLICE, consumer.room())
            except ClientError:
                self._drop_connection()  # replaced at the top of the loop
                continue
            if consumer.take(runs):
                # Deliveries flow again: gather them for a slice rather than waking up for
                # each read of the I/O thread (a broker that sends each delivery on its own,
                # as RabbitMQ does at its pace, made this loop turn per delivery or two).
                idle_since = time.monotonic()
                time.sleep(DRAIN_SLICE)

    def _broker_still_has(self, queues: list[str]) -> bool:
        """AvailableNow: whether one of ``queues`` still has ready messages for us, so that
        a silence is the broker being slow (paging a long queue in), not the end. Without a
        budget (once runs), a silence is the end."""
        from amqp_spark.client import ClientError

        if not self._available_now or self._conn is None:
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
        fewer than the window unacked (every buffered delivery is unacked)."""
        return [q for q, c in self._consumers.items() if c.room() > 0 and len(c.arrived) < c.window]

    def half_windows(self) -> int:
        """A batch's rows without a row limit: half of what may be in flight, so that the
        broker keeps sending the other half while Spark processes the batch. A default
        window counts as the size it is growing to: a batch planned while it grows is not
        cut to the first consumers' few messages."""
        return sum(max(1, self._window_of(c) // 2) for c in self._consumers.values())

    def _window_of(self, consumer: _Consumer) -> int:
        if self._fixed is not None or self._default_window is None:
            return consumer.window
        return max(consumer.window, self._default_window.target(consumer.average_body()))

    # -- offsets ------------------------------------------------------------------------------

    def start_offset(self) -> ClassicOffset:
        with self._lock:
            self.ensure_open()
            return ClassicOffset(self.connection_id, dict.fromkeys(self.queues, 0))

    def latest(self, start: ClassicOffset, limits: Limits, wait: bool) -> ClassicOffset:
        """The end of the next batch after ``start``, from what has arrived.

        With ``wait`` (AvailableNow and once runs), first wait (bounded) for deliveries
        still on their way, so that the run does not end while the queue still has messages.
        The rows of a batch are shared fairly between queues (a queue with fewer buffered
        gives its unused share to the others).
        """
        with self._lock:
            self.ensure_open()
            if wait:
                # After ack_through(start), every buffered delivery is beyond `start`.
                self._wait_for_more(limits.max_rows, self._options.poll_timeout)
            else:
                self._receive()
            self.ensure_open()  # a connection that died while receiving is replaced
            rows = limits.max_rows or self.half_windows()
            firsts = {
                q: c.after(start.tag(q, self.connection_id)) for q, c in self._consumers.items()
            }
            counts = fair_shares(
                {q: len(c.arrived) - firsts[q] for q, c in self._consumers.items()}, rows
            )
            if limits.max_bytes is not None:
                counts = self._within_bytes(firsts, counts, limits.max_bytes)
            tags = {
                q: c.arrived.tag_at(firsts[q] + counts[q] - 1)
                if counts[q]
                else start.tag(q, self.connection_id)
                for q, c in self._consumers.items()
            }
            return ClassicOffset(self.connection_id, tags)

    def _within_bytes(
        self, firsts: dict[str, int], counts: dict[str, int], max_bytes: int
    ) -> dict[str, int]:
        """``counts`` cut so that the bodies, taken from the queues in turn, fit in
        ``max_bytes`` (at least one message, so that a large one still gets through)."""
        kept = dict.fromkeys(counts, 0)
        size = taken = 0
        for i in range(max(counts.values(), default=0)):
            for q, count in counts.items():
                if i >= count:
                    continue
                size += self._consumers[q].arrived.body_size(firsts[q] + i)
                if taken and size > max_bytes:
                    return kept
                kept[q] += 1
                taken += 1
        return kept

    def batch(self, start: ClassicOffset, end: ClassicOffset) -> list[tuple[str, DeliveryColumns]]:
        """Per queue, the buffered deliveries in (start, end], in tag order. Empty when
        ``end`` belongs to an earlier connection: the broker redelivers those messages."""
        with self._lock:
            if end.connection != self.connection_id:
                return []
            segments = []
            for q, c in self._consumers.items():
                first, last = (
                    c.after(start.tag(q, self.connection_id)),
                    c.after(end.tag(q, end.connection)),
                )
                if last > first:
                    segments.append((q, c.arrived.rows(first, last)))
            return segments

    def ack_through(self, end: ClassicOffset) -> None:
        """Ack every delivery up to ``end`` on its channel (multiple=true) and forget them.
        Does nothing for an offset of another connection."""
        from amqp_spark.client import ClientError

        with self._lock:
            if self._conn is None or end.connection != self.connection_id:
                return
            try:
                for queue, c in self._consumers.items():
                    tag = end.tag(queue, self.connection_id)
                    if tag > c.acked:
                        c.ack(tag)
            except ClientError:
                self._drop_connection()  # unacked: the broker requeues them

    # -- reporting ----------------------------------------------------------------------------

    def waiting(self) -> dict[str, dict[str, int | None]]:
        """Per queue, messages ready on the broker (at its last answer, about a second old;
        None before the first) and messages received but not yet acked (in a batch or
        waiting for one)."""
        with self._lock:
            self._ask_depths()
            unacked = {q: len(c.arrived) for q, c in self._consumers.items()}
            return {
                q: {"ready": self._depths.get(q), "unacked": unacked.get(q, 0)} for q in self.queues
            }

    def redelivered(self) -> dict[str, int]:
        """Per queue, the deliveries this run received marked redelivered: returns of
        earlier runs (or of other consumers), which count towards a delivery limit."""
        with self._lock:
            counts = dict(self._redelivered)
            for queue, consumer in self._consumers.items():
                counts[queue] = counts.get(queue, 0) + consumer.redelivered
            return {q: counts.get(q, 0) for q in self.queues}

    def _ask_depths(self) -> None:
        """Take the broker's answers to the depth questions asked before and, once all are
        in and a second has passed, ask again, without waiting for the answers: on this
        connection they come behind up to a window of deliveries (measured: about a second
        behind 65535 messages of 100 bytes, and Spark asks for progress at every trigger).
        Passive declares on a channel of their own, opened before consuming started."""
        from amqp_spark.client import ClientError

        try:
            for queue, question in list(self._depth_questions.items()):
                answer = question.result()
                if answer is not None:
                    self._depths[queue] = int(answer.message_count)
                    del self._depth_questions[queue]
            ch = self._depth_channel
            if ch is None or self._depth_questions:
                return
            if time.monotonic() - self._depths_at >= DEPTH_REFRESH_SECONDS:
                self._depths_at = time.monotonic()
                self._depth_questions = {
                    q: ch.request_later("queue.declare", queue=q, passive=True) for q in self.queues
                }
        except ClientError:
            # A queue gone (404 closes the channel) or the connection lost: report the last
            # answers; consuming is unaffected, and a new connection brings a new channel.
            self._depth_channel, self._depth_questions = None, {}


def fair_shares(available: dict[str, int], total: int) -> dict[str, int]:
    """How many of ``total`` to take from each queue, at most what it has available, as
    evenly as possible: a queue with less gives its unused share to the others."""
    shares = dict.fromkeys(available, 0)
    left = total
    by_size = sorted(available, key=available.__getitem__)
    for i, queue in enumerate(by_size):
        share = min(available[queue], -(-left // (len(by_size) - i)))  # ceil division
        shares[queue] = share
        left -= share
    return shares
