"""How many unacked deliveries the driver holds per classic queue when ``prefetch`` is not set.

The window (deliveries received, unacked until Spark commits their batch) bounds the batch:
a micro-batch takes at most half of it, so that the broker keeps sending the other half
while Spark processes the batch. Two costs pull it in opposite directions:

* Spark's cost per micro-batch is large next to its cost per row (about a quarter to half a
  CPU-second of the JVM per batch against ~25 µs per row for the whole pipeline, see
  docs/source.md), so small batches waste the machine: batches of 5,000 rows (the old
  default ``prefetch`` of 10000) paid that cost 60 times for 300,000 rows;
* the broker's cost per message grows with the messages it holds unacked (RabbitMQ 4 most:
  62.9 µs of CPU per message with a window of 131070, 41.1 with 40000);
* the driver keeps every delivery of the window in memory, and the batch a second time as
  Arrow bytes: a fixed count of messages is harmless at 100 B and ruinous at 1 MB.

So by default the window is chosen per queue from the body sizes seen: as large as
:data:`DEFAULT_WINDOW_MESSAGES`, but no more than :data:`DEFAULT_WINDOW_BYTES` (shared by the
query's queues) of memory. AMQP 0-9-1 bounds deliveries in flight by count only (RabbitMQ
refuses ``prefetch-size``), so the source learns the sizes first: it starts one consumer with
a window of one message and grows the window as the deliveries it has seen show how large it
may be, at most :data:`GROWTH` times at each step. A consumer's prefetch is fixed when it is
made (``basic.qos`` then ``basic.consume``), so a step makes a new consumer; and since every
consumer on the channel costs RabbitMQ CPU per message (measured on RabbitMQ 4, 600,000 x 100
B into noop: 23.0-23.5 µs per message with one consumer of 40,000, 25.6-26.2 with two making
up 40,000, 26.9-27.2 with five, docs/measurements/classic-source.md), a step *replaces* the
consumers smaller than one consumer's largest window (``CONSUMER_PREFETCH_MAX``) by one
consumer of the new window, so that the grown window is as few consumers as can hold it: one
on RabbitMQ, two of 65,535 on the bundled broker. The replaced consumers' deliveries stay
unacked until their batch is acked, so a step replaces only when the memory budget holds them
beside the new window (:meth:`DefaultWindow.may_replace`), and adds a consumer for the
difference otherwise; until they are acked, the window grows only as far as the budget holds
them too. So the bytes bound holds at every step, and the count may pass the window by what
the replaced consumers held (the windows before the last step: 1 + 16 + 256 + 4,096 = 4,369
messages beside 40,000 or 131,070 for small messages) until their batch is acked. Should
messages then grow, the consumers are replaced by one of a single message while the driver
holds more than its share of the budget.

The count depends on the broker (``connection.start``'s ``product``, see
:func:`window_messages_for`): RabbitMQ's CPU per message grows with the unacked window, the
bundled broker's does not, so there the window is larger and the batches with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from amqp_spark.server_product import product_and_version
from amqp_spark.source.options import CONSUMER_PREFETCH_MAX

#: The default window's count, per queue (batches of 20,000). Measured on RabbitMQ 4.0.5
#: (300,000 x 100 B, AvailableNow into noop, per-process CPU, see docs/source.md): RabbitMQ's
#: CPU per message grows with the unacked window (38.9 µs at 20000, 41.1 at 40000, 48.1 at
#: 65535, 62.9 at 131070; 35.8 for the raw client), Spark's JVM per batch (29.7 µs per row
#: in 30 batches, 12.4 in 15, 8.6 in 10): 40000 cost least in all and read fastest.
DEFAULT_WINDOW_MESSAGES = 40_000
#: The default window's count on the bundled broker (batches of 65,535), whose CPU per message
#: does not grow with the window (6.9 CPU-s per million at 40000, 7.2 at 131070) while Spark's
#: per batch falls: measured 2.3x the rows/s of 40000 (docs/measurements/classic-source.md).
BUNDLED_BROKER_WINDOW_MESSAGES = 131_070
#: ``connection.start``'s ``product`` of the bundled broker (``broker/``).
BUNDLED_BROKER_PRODUCT = "amqp-spark broker"
#: What the default windows of one query may hold in the driver, all queues together.
DEFAULT_WINDOW_BYTES = 128 * 2**20
#: Memory of a held delivery besides its body. Held as columns (``held``), measured with
#: tracemalloc: 87 B for deliveries that share their properties (a publisher's usual), 850 B
#: for deliveries that each have their own (a message id and a timestamp each: every one a
#: kind of its own); a bound between the two, since the count bounds the window too.
DELIVERY_OVERHEAD = 400
#: By how much the window may grow at once: evidence of the sizes comes from deliveries
#: already received, so the window is at most GROWTH times what the sizes were seen over.
GROWTH = 16


def window_messages_for(server_properties: Mapping[str, Any]) -> int:
    """The default window's count on the broker that sent ``server_properties``
    (``connection.start``): larger on the bundled broker only; RabbitMQ's and any other
    broker's is the one measured on RabbitMQ."""
    product, _ = product_and_version(server_properties)
    if product == BUNDLED_BROKER_PRODUCT:
        return BUNDLED_BROKER_WINDOW_MESSAGES
    return DEFAULT_WINDOW_MESSAGES


def message_cost(average_body: float) -> float:
    """Driver memory per message of the window: the delivery, and half of it again as the
    Arrow copy of a batch (a batch is at most half the window)."""
    return DELIVERY_OVERHEAD + 1.5 * average_body


@dataclass(frozen=True)
class DefaultWindow:
    """The window of one queue without ``prefetch``: at most ``max_messages`` deliveries and
    ``budget_bytes`` of driver memory."""

    budget_bytes: int
    max_messages: int = DEFAULT_WINDOW_MESSAGES

    @classmethod
    def for_queues(cls, queues: int, max_messages: int = DEFAULT_WINDOW_MESSAGES) -> DefaultWindow:
        return cls(DEFAULT_WINDOW_BYTES // max(1, queues), max_messages)

    def target(self, average_body: float, retired: int = 0) -> int:
        """The window for messages of this average body size, in messages (at least one),
        beside ``retired`` deliveries that replaced consumers may still hold."""
        by_bytes = int(self.budget_bytes // message_cost(average_body)) - retired
        return max(1, min(self.max_messages, by_bytes))

    def next_window(self, window: int, seen: int, average_body: float, retired: int = 0) -> int:
        """The window to grow ``window`` to after ``seen`` deliveries with bodies of
        ``average_body`` bytes, beside ``retired`` deliveries that replaced consumers may
        still hold; ``window`` itself when it should not grow (yet). It grows only once as
        many deliveries were seen as it holds, by at most GROWTH times, and stops at one
        consumer's largest window before it passes it (a window beyond it is made of
        consumers of that size)."""
        if seen < window:
            return window
        wanted = min(self.target(average_body, retired), window * GROWTH)
        if window < CONSUMER_PREFETCH_MAX:
            wanted = min(wanted, CONSUMER_PREFETCH_MAX)
        return max(window, wanted)

    def may_replace(self, retired: int, replaced: int, window: int, average_body: float) -> bool:
        """Whether consumers with a window of ``replaced`` may be replaced by consumers of
        ``window`` while consumers replaced before may still hold ``retired`` deliveries:
        what the replaced ones hold or have on the way stays unacked until its batch is
        acked, beside the new window."""
        return (retired + replaced + window) * message_cost(average_body) <= self.budget_bytes

    def over_budget(self, held_bytes: int, held: int) -> bool:
        """Whether ``held`` deliveries of ``held_bytes`` body bytes exceed the memory budget."""
        return held_bytes * 1.5 + held * DELIVERY_OVERHEAD > self.budget_bytes
