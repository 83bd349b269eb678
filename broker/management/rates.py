"""Message counts and rates as RabbitMQ reports them (``message_stats``, ``*_details``).

The counters are ``MessageStats`` integers the hot path bumps; ``RateSampler.tick`` records
them every ``interval`` seconds (RabbitMQ's ``collect_statistics_interval``, 5 s), and a
rate is the change between the last two samples over the time between them. Nothing is
computed per message.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..model.stats import MessageStats

if TYPE_CHECKING:
    from ..server.app import BrokerServer
    from ..server.connection import AMQPConnection

Counts = dict[str, int]
Sample = tuple[float, Counts]
#: seconds between two samples
INTERVAL = 5.0
#: samples of the overall rates kept for the console's chart
HISTORY = 60

#: The ``message_stats`` fields each kind of object reports, as RabbitMQ's.
CHANNEL_FIELDS = (
    "publish",
    "confirm",
    "deliver",
    "deliver_no_ack",
    "get",
    "get_no_ack",
    "deliver_get",
    "redeliver",
    "ack",
)
QUEUE_FIELDS = tuple(f for f in CHANNEL_FIELDS if f != "confirm")
EXCHANGE_FIELDS = ("publish_in", "publish_out")


def counts_of(stats: MessageStats) -> Counts:
    counts = stats.as_dict()
    counts["deliver_get"] = (
        counts["deliver"] + counts["deliver_no_ack"] + counts["get"] + counts["get_no_ack"]
    )
    return counts


def connection_stats(conn: AMQPConnection) -> MessageStats:
    """A connection's counts: its closed channels' and its open ones'."""
    total = MessageStats()
    total.add(conn.stats)
    for channel in conn.channels.values():
        if not channel.closed:
            total.add(channel.stats)
    return total


def overall_stats(server: BrokerServer) -> MessageStats:
    """The broker's counts since it started: closed connections' and open ones'."""
    total = MessageStats()
    total.add(server.closed_stats)
    for conn in server.connections:
        total.add(connection_stats(conn))
    return total


class RateSampler:
    """The last two samples of each object's counts, forgotten with the object."""

    def __init__(self) -> None:
        self._samples: weakref.WeakKeyDictionary[Any, tuple[Sample, Sample | None]] = (
            weakref.WeakKeyDictionary()
        )
        #: (time, overall rates) of the last ``HISTORY`` ticks
        self.history: deque[tuple[float, dict[str, float]]] = deque(maxlen=HISTORY)

    def record(self, obj: Any, now: float, counts: Counts) -> None:
        last = self._samples.get(obj)
        self._samples[obj] = ((now, counts), last[0] if last else None)

    def rates(self, obj: Any) -> dict[str, float]:
        """Per-second change of each count between the last two samples (0.0 before two)."""
        pair = self._samples.get(obj)
        if pair is None or pair[1] is None:
            return {}
        (now, counts), (then, before) = pair[0], pair[1]
        elapsed = now - then
        if elapsed <= 0:
            return {}
        return {k: round((v - before.get(k, 0)) / elapsed, 1) for k, v in counts.items()}

    def tick(self, server: BrokerServer, now: float) -> None:
        """Sample every queue, exchange, channel and connection, and the broker."""
        for vhost in server.vhosts.values():
            self.record(vhost, now, queue_totals([vhost]))
            for queue in vhost.queues.values():
                self.record(queue, now, {**counts_of(queue.stats), **depths(queue)})
            for exchange in vhost.exchanges.values():
                self.record(exchange, now, counts_of(exchange.stats))
        for conn in list(server.connections):
            for channel in conn.channels.values():
                self.record(channel, now, counts_of(channel.stats))
            self.record(conn, now, counts_of(connection_stats(conn)))
        overall = {**counts_of(overall_stats(server)), **queue_totals(server.vhosts.values())}
        self.record(server, now, overall)
        self.history.append((now, self.rates(server)))


def depths(queue: Any) -> Counts:
    ready, unacked = queue.message_count, queue.unacked
    return {
        "messages": ready + unacked,
        "messages_ready": ready,
        "messages_unacknowledged": unacked,
    }


def queue_totals(vhosts: Iterable[Any]) -> Counts:
    totals = {"messages": 0, "messages_ready": 0, "messages_unacknowledged": 0}
    for vhost in vhosts:
        for queue in vhost.queues.values():
            for key, value in depths(queue).items():
                totals[key] += value
    return totals


def with_details(counts: Counts, rates: dict[str, float], fields: Iterable[str]) -> dict[str, Any]:
    """``{field: n, field_details: {"rate": r}}`` for each field, as RabbitMQ shows them."""
    out: dict[str, Any] = {}
    for name in fields:
        out[name] = counts.get(name, 0)
        out[f"{name}_details"] = {"rate": rates.get(name, 0.0)}
    return out


def message_stats(
    stats: MessageStats, rates: dict[str, float], fields: tuple[str, ...]
) -> dict[str, Any] | None:
    """An object's ``message_stats``, or None while nothing happened (RabbitMQ leaves the
    field out until then)."""
    counts = counts_of(stats)
    if not any(counts.get(f) for f in fields):
        return None
    return with_details(counts, rates, fields)
