"""Rules basic:04 and message:04: the server MAY overflow non-persistent messages to
persistent storage. A queue past its in-memory threshold keeps the rest of its messages in
spill files, also on a broker without a data directory, and delivers them all back: in order,
highest priority first when the queue has priorities (a basic queue with ``x-max-priority``,
the ten levels of a 0-9 message-class lane), messages of the message class as such."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amqp_protocol import SPEC_0_9
from amqp_spark.client import connect
from broker import Broker
from broker.model.queues import Queue
from broker.model.ready_messages import ReadyMessages
from broker.server.app import BrokerServer

from .flows import declare_queue, receive_transfer, transfer
from .peer import Peer

THRESHOLD = 200
COUNT = THRESHOLD * 5
BODY = b"x" * 100
#: The bytes the in-memory head of a queue may hold (the memory gauge counts bodies).
HEAD_BYTES = THRESHOLD * (len(BODY) + 4)


def _priority(i: int) -> int:
    """Priorities of the published messages: every level, interleaved."""
    return i * 7 % 10


def _body(i: int) -> bytes:
    return BODY + b"%d" % i


#: The bodies in delivery order: by priority, then in publishing order.
BY_PRIORITY = [_body(i) for i in sorted(range(COUNT), key=lambda i: -_priority(i))]


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Broker]:
    """An in-memory broker whose queues spill past ``THRESHOLD`` messages."""
    monkeypatch.setattr(ReadyMessages, "SPILL_AFTER_MESSAGES", THRESHOLD)
    with Broker() as broker:
        yield broker


def _server(broker: Broker) -> BrokerServer:
    server = broker._server
    assert server is not None
    return server


def _assert_spilled(broker: Broker, queue: Queue) -> None:
    """All of ``queue`` but its in-memory head went to disk; memory holds only that head."""
    assert queue.ready.spilled == COUNT - THRESHOLD
    assert _server(broker).memory.used <= HEAD_BYTES


@pytest.mark.spec_rule("basic:04")
@pytest.mark.parametrize("prioritised", [False, True], ids=["fifo", "x-max-priority"])
def test_non_persistent_basic_messages_past_the_threshold_go_to_disk_and_come_back_in_order(
    broker: Broker, prioritised: bool
) -> None:
    arguments = {"x-max-priority": 9} if prioritised else None
    with connect(broker.url, spec=SPEC_0_9) as conn:
        ch = conn.channel()
        ch.queue_declare("overflowing", arguments=arguments)
        for i in range(COUNT):
            properties = {"delivery_mode": 1, "priority": _priority(i)}
            ch.basic_publish("", "overflowing", _body(i), properties)
        assert ch.queue_declare("overflowing", passive=True).message_count == COUNT
        _assert_spilled(broker, _server(broker).vhosts["/"].queues["overflowing"])
        bodies = []
        for _ in range(COUNT):
            delivery = ch.basic_get("overflowing", no_ack=True)
            assert delivery is not None
            bodies.append(delivery.body)
    assert bodies == (BY_PRIORITY if prioritised else [_body(i) for i in range(COUNT)])


@pytest.mark.spec_rule("message:04")
def test_message_class_messages_past_the_threshold_go_to_disk_and_come_back_by_priority(
    broker: Broker, name: str
) -> None:
    peer = Peer(broker.url)
    try:
        peer.open_channel(1)
        queue = declare_queue(peer, 1, name)
        for i in range(COUNT):
            transfer(peer, 1, queue, _body(i), priority=_priority(i), message_id=f"id-{i}")
        vhost = _server(broker).vhosts["/"]
        _assert_spilled(broker, vhost.lanes[vhost.queues[queue]]["message"])
        peer.call(1, "message.consume", queue=queue, destination="d", no_ack=True)
        received = [receive_transfer(peer, 1) for _ in range(COUNT)]
    finally:
        peer.close()
    assert [m.body.data for m in received] == BY_PRIORITY
    # messages of their class, with their fields
    assert [m.message_id for m in received] == [
        f"id-{b[len(BODY) :].decode()}" for b in BY_PRIORITY
    ]
    assert [m.priority for m in received] == sorted(
        (_priority(i) for i in range(COUNT)), reverse=True
    )
