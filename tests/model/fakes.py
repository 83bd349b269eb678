"""What the model's tests run a queue with instead of a server: a clock whose time moves only
when the test says, a consumer's sink that records its deliveries, and a ``QueueContext``
that records what the queue lets go and when it finds itself unused."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from amqp_protocol import SPEC_0_9_1
from broker.model.memory import MemoryGauge
from broker.model.message import Message, QueuedMessage
from broker.model.persistence import InMemory
from broker.model.queues import Consumer, Queue, QueueContext

Properties = SPEC_0_9_1.properties("basic")


class FakeTimer:
    def __init__(self, at: float, callback: Callable[[], None]) -> None:
        self.at = at
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A ``broker.model.clock.Clock`` at 1000.0 seconds until ``advance`` moves it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._timers: list[tuple[float, int, FakeTimer]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(self.now + delay, callback)
        heapq.heappush(self._timers, (timer.at, next(self._order), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds``, running the timers due by then in time order
        (each at its own time, as an event loop would)."""
        end = self.now + seconds
        while self._timers and self._timers[0][0] <= end:
            at, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                self.now = max(self.now, at)
                timer.callback()
        self.now = end

    @property
    def pending(self) -> int:
        """Timers armed and neither run nor cancelled."""
        return sum(not timer.cancelled for _, _, timer in self._timers)


class RecordingSink:
    """A channel as a queue sees it: takes up to each consumer's prefetch (0: any number)
    and records every delivery; ``blocked`` stands for a socket that cannot take more."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, QueuedMessage]] = []
        self.cancelled: list[str] = []
        self.blocked = False

    def can_deliver(self, consumer: Consumer) -> bool:
        if self.blocked:
            return False
        return consumer.prefetch == 0 or consumer.unacked < consumer.prefetch

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        if not consumer.no_ack:
            consumer.unacked += 1
        self.deliveries.append((consumer.tag, entry))

    def consumer_cancelled(self, consumer: Consumer) -> None:
        self.cancelled.append(consumer.tag)

    def bodies(self, tag: str | None = None) -> list[bytes]:
        return [e.message.body for t, e in self.deliveries if tag is None or t == tag]

    def settle(self, consumer: Consumer, entry: QueuedMessage) -> None:
        """basic.ack of one delivery, as the channel does it: settle, then dispatch."""
        consumer.unacked -= 1
        consumer.queue.settle(entry)
        consumer.queue.dispatch()


class Host:
    """The ``QueueContext`` of a queue without a virtual host: it records the messages let
    go (queue name, body, reason) and the queues found unused."""

    def __init__(self, clock: FakeClock | None = None, memory_high: int = 1 << 30) -> None:
        self.clock = clock or FakeClock()
        self.memory = MemoryGauge(memory_high)
        self.dead_letters: list[tuple[str, bytes, str]] = []
        self.unused: list[str] = []
        self.context = QueueContext(
            "/", self.clock, self.memory, InMemory(), self._dead_letter, self._unused
        )

    def _dead_letter(self, queue: Queue, message: Message, reason: str) -> None:
        self.dead_letters.append((queue.name, message.body, reason))

    def _unused(self, queue: Queue) -> None:
        self.unused.append(queue.name)

    def queue(
        self,
        name: str = "q",
        factory: Callable[..., Queue] = Queue,
        *,
        durable: bool = False,
        **arguments: Any,
    ) -> Queue:
        """A queue declared with ``arguments`` (its x- arguments, given as x_message_ttl=...)."""
        args = {"x-" + key[2:].replace("_", "-"): value for key, value in arguments.items()}
        return factory(self.context, name, durable=durable, arguments=args)


def message(body: bytes, **properties: Any) -> Message:
    return Message("", "q", Properties(**properties), body)


def consume(
    queue: Queue, sink: RecordingSink, tag: str, *, prefetch: int = 0, **options: Any
) -> Consumer:
    """basic.consume as the channel does it: add the consumer, then dispatch."""
    consumer = Consumer(tag, queue, sink, prefetch=prefetch, **options)
    queue.add_consumer(consumer)
    queue.dispatch()
    return consumer


def ready_bodies(queue: Queue) -> list[bytes]:
    """The bodies of the ready messages in delivery order (taken with get and settled)."""
    out = []
    while (entry := queue.get()) is not None:
        queue.settle(entry)
        out.append(entry.message.body)
    return out
