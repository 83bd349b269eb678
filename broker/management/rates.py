"""Message counts and rates as RabbitMQ reports them (``message_stats``, ``*_details``).

The counters are ``MessageStats`` integers the hot path bumps; ``RateSampler.tick`` records
them every ``interval`` seconds (RabbitMQ's ``collect_statistics_interval``, 5 s), and a
rate is the change between the last two samples over the time between them. Nothing is
computed per message.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..model.stats import FIELDS, MessageStats

if TYPE_CHECKING:
    from ..server.channel import ServerChannel
    from ..server.connection_view import ConnectionSnapshot
    from .managed import ManagedBroker

Counts = dict[str, int]
Sample = tuple[float, tuple[int, ...]]
#: seconds between two samples
INTERVAL = 5.0
#: samples of the overall rates kept for the console's chart
HISTORY = 60
#: queues sampled per event-loop turn (a few milliseconds)
STEP = 500

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


def connection_stats(view: ConnectionSnapshot[ServerChannel]) -> MessageStats:
    """A connection's counts: its closed channels' and its open ones'."""
    total = MessageStats()
    total.add(view.stats)
    for channel in view.channels:
        total.add(channel.stats)
    return total


def overall_stats(server: ManagedBroker) -> MessageStats:
    """The broker's counts since it started: closed connections' and open ones'."""
    total = MessageStats()
    total.add(server.closed_stats)
    for conn in server.connections:
        total.add(connection_stats(conn.snapshot()))
    return total


#: What a sample holds, in order: the counters, then a queue's (or a total's) depths.
SAMPLED = (*FIELDS, "messages", "messages_ready", "messages_unacknowledged")
_counters = attrgetter(*FIELDS)
_NO_COUNTS = (0,) * len(FIELDS)
#: the counts whose sum is ``deliver_get``
_DELIVER_GET = ("deliver", "deliver_no_ack", "get", "get_no_ack")


class RateSampler:
    """The last two samples of each object's counts, forgotten with the object. A sample
    is a tuple of ints in ``SAMPLED``'s order, so that a tick over many queues stays cheap
    (about 2 us per queue); rates are worked out when asked for."""

    def __init__(self) -> None:
        self._samples: weakref.WeakKeyDictionary[Any, tuple[Sample, Sample | None]] = (
            weakref.WeakKeyDictionary()
        )
        #: (time, overall rates) of the last ``HISTORY`` ticks
        self.history: deque[tuple[float, dict[str, float]]] = deque(maxlen=HISTORY)

    def record(self, obj: Any, now: float, values: tuple[int, ...]) -> None:
        """A sample of ``obj``: ``values`` in ``SAMPLED``'s order (a prefix of it)."""
        last = self._samples.get(obj)
        self._samples[obj] = ((now, values), last[0] if last else None)

    def rates(self, obj: Any) -> dict[str, float]:
        """Per-second change of each count between the last two samples ({} before two)."""
        pair = self._samples.get(obj)
        if pair is None or pair[1] is None:
            return {}
        (now, values), (then, before) = pair[0], pair[1]
        elapsed = now - then
        if elapsed <= 0:
            return {}
        rates = {
            name: round((v - b) / elapsed, 1)
            for name, v, b in zip(SAMPLED[: len(values)], values, before, strict=True)
        }
        rates["deliver_get"] = round(sum(rates[k] for k in _DELIVER_GET), 1)
        return rates

    def tick(self, server: ManagedBroker, now: float) -> None:
        """Sample everything at once, at time ``now`` (``steps`` spreads the same work)."""
        for _ in self.steps(server, lambda: now):
            pass

    def steps(self, server: ManagedBroker, clock: Callable[[], float]) -> Iterator[None]:
        """Sample every queue, exchange, channel and connection, each vhost and the broker,
        pausing (yielding) after every ``STEP`` objects so that the caller can let the event
        loop serve connections in between; each object's sample is timed by ``clock``
        when taken. Lists are copied first: what goes meanwhile is sampled once more."""
        record, now, done = self.record, clock(), 0
        total_ready = total_unacked = 0
        for vhost in list(server.vhosts.values()):
            ready = unacked = 0
            for queue in list(vhost.queues.values()):
                q_ready, q_unacked = queue.message_count, queue.unacked
                ready += q_ready
                unacked += q_unacked
                sample = (*_counters(queue.stats), q_ready + q_unacked, q_ready, q_unacked)
                record(queue, now, sample)
                done += 1
                if done % STEP == 0:
                    yield
                    now = clock()
            record(vhost, now, (*_NO_COUNTS, ready + unacked, ready, unacked))
            total_ready += ready
            total_unacked += unacked
            for exchange in list(vhost.exchanges.values()):
                record(exchange, now, _counters(exchange.stats))
        for conn in list(server.connections):
            view = conn.snapshot()
            for channel in view.channels:
                record(channel, now, _counters(channel.stats))
            record(conn, now, _counters(connection_stats(view)))
        totals = (total_ready + total_unacked, total_ready, total_unacked)
        record(server, now, (*_counters(overall_stats(server)), *totals))
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
