"""The stream queue in the broker's model, without the network: a real VirtualHost, an
event loop as its clock, and a sink that records what would go to a channel."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amqp_protocol import SPEC_0_9_1, errors
from broker.model.memory import MemoryGauge
from broker.model.message import Message, QueuedMessage
from broker.model.queues import Consumer, Queue
from broker.model.vhost import VirtualHost
from broker.streams.queue import StreamQueue

Properties = SPEC_0_9_1.properties("basic")


class Directories:
    """A store that keeps streams under a test's temporary directory (no other hooks run)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def stream_directory(self, vhost: str, queue: str) -> Path:
        return self.root / queue

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class Sink:
    """Records deliveries; honours the consumer's prefetch like a channel does."""

    def __init__(self) -> None:
        self.delivered: list[QueuedMessage] = []
        self.channel_prefetch = 0

    def can_deliver(self, consumer: Consumer) -> bool:
        return consumer.unacked < consumer.prefetch

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        consumer.unacked += 1
        self.delivered.append(entry)

    def consumer_cancelled(self, consumer: Consumer) -> None:
        pass

    @property
    def offsets(self) -> list[int]:
        return [e.message.headers["x-stream-offset"] for e in self.delivered]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def vhost(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> VirtualHost:
    return VirtualHost("/", loop, MemoryGauge(1 << 30), Directories(tmp_path))


def declare(vhost: VirtualHost, name: str = "s", **arguments: Any) -> StreamQueue:
    return StreamQueue(
        vhost.queue_context, name, durable=True, arguments={"x-queue-type": "stream", **arguments}
    )


def publish(q: StreamQueue, *bodies: bytes) -> None:
    for body in bodies:
        q.publish(Message("", q.name, Properties(headers={"k": "v"}), body))
    q.flush()


def consume(q: StreamQueue, offset: Any = None, prefetch: int = 100) -> tuple[Consumer, Sink]:
    sink = Sink()
    consumer = Consumer("c", q, sink, prefetch=prefetch)
    q.add_consumer(consumer, None if offset is None else {"x-stream-offset": offset})
    q.dispatch()
    return consumer, sink


def test_deliveries_carry_their_offset_and_keep_the_published_headers(vhost: VirtualHost) -> None:
    q = declare(vhost)
    publish(q, b"a", b"b", b"c")
    _, sink = consume(q, "first")
    assert sink.offsets == [0, 1, 2]
    assert [e.message.body for e in sink.delivered] == [b"a", b"b", b"c"]
    assert sink.delivered[0].message.headers["k"] == "v"
    assert q.message_count == 3


def test_credit_is_checked_per_chunk_and_acks_return_it(vhost: VirtualHost) -> None:
    q = declare(vhost)
    publish(q, b"a", b"b", b"c")  # one chunk
    publish(q, b"d")
    consumer, sink = consume(q, "first", prefetch=1)
    assert sink.offsets == [0, 1, 2]  # the whole first chunk, as RabbitMQ does
    consumer.unacked = 0  # what the channel does when the three are acked
    q.dispatch()
    assert sink.offsets == [0, 1, 2, 3]
    assert q.message_count == 4


def test_publishes_are_delivered_after_the_flush(vhost: VirtualHost) -> None:
    q = declare(vhost)
    _, sink = consume(q)
    q.publish(Message("", "s", Properties(), b"x"))
    assert sink.offsets == [] and q.message_count == 1
    q.flush()
    assert sink.offsets == [0]


def test_start_offsets(vhost: VirtualHost) -> None:
    q = declare(vhost)
    publish(q, b"a", b"b")
    publish(q, b"c", b"d")
    assert consume(q, "last")[1].offsets == [2, 3]
    assert consume(q, "next")[1].offsets == []
    assert consume(q, 1)[1].offsets == [1, 2, 3]
    assert consume(q, "10m")[1].offsets == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("what", "call"),
    [
        ("basic.get", lambda q: q.get()),
        ("queue.purge", lambda q: q.purge()),
    ],
)
def test_refused_operations_close_the_connection(vhost: VirtualHost, what: str, call: Any) -> None:
    q = declare(vhost)
    with pytest.raises(errors.NotImplemented_, match=f"{what} not supported by stream queues"):
        call(q)


def test_the_log_survives_the_queue_object(vhost: VirtualHost) -> None:
    q = declare(vhost)
    publish(q, b"a", b"b")
    q.close()
    again = declare(vhost)
    assert consume(again, "first")[1].offsets == [0, 1]


def test_delete_removes_the_log(vhost: VirtualHost, tmp_path: Path) -> None:
    q = declare(vhost, "gone")
    publish(q, b"a")
    q.destroy()
    assert not (tmp_path / "gone").exists()


def test_requeue_and_reject_give_nothing_back_and_do_not_fail(vhost: VirtualHost) -> None:
    """A closing channel, a nack or a reject settles as an ack does (RabbitMQ 4.0; 3.10
    refused a nack or reject with 540): the log keeps the message, nothing is redelivered."""
    q = declare(vhost)
    publish(q, b"a", b"b")
    _, sink = consume(q, "first")
    first, second = sink.delivered
    q.requeue([first])
    q.reject(second)
    assert sink.offsets == [0, 1]
    assert q.message_count == 2
