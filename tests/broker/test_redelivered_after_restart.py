"""After a restart, only messages that may have been delivered come back ``redelivered``, and
a quorum queue's messages keep ``x-delivery-count`` (the restart returns what was out).

The same traffic runs against the bundled broker (``python -m broker`` on a data directory,
stopped cleanly or with kill -9) and against a private RabbitMQ node of this module (not
the session's: restarting it would cut the other tests' connections), restarted with
``rabbitmqctl stop_app``/``start_app``. Measured on RabbitMQ 3.10.8:

* classic: m0 acked, m1 nacked (back to the head) and fetched again, held unacked at the
  restart: m1 comes back redelivered, m2..m5 not;
* quorum: m0 acked, m1 nacked (to the back, x-delivery-count 1), m2 held unacked: m1 and m2
  come back redelivered with x-delivery-count 1, m3..m5 not redelivered, count 0.

The order of the quorum queue's messages after the restart is not compared: RabbitMQ keeps
m1 behind m5 (where the nack put it), the bundled broker recovers a queue in publish order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pika
import pytest

from tests.durability.broker_process import BrokerProcess
from tests.support.rabbitmq import RabbitMQNode, RabbitMQUnavailable, find_server_scripts

PERSISTENT = pika.BasicProperties(delivery_mode=2)
BODIES = [b"m%d" % i for i in range(6)]
QUEUE_ARGS = {"classic": {}, "quorum": {"x-queue-type": "quorum"}}
#: body -> (redelivered, x-delivery-count of basic.get-ok: quorum queues only) after a restart
EXPECTED = {
    "classic": {b"m1": (True, None), **{b: (False, None) for b in BODIES[2:]}},
    "quorum": {
        b"m1": (True, 1),
        b"m2": (True, 1),
        **{b: (False, 0) for b in BODIES[3:]},
    },
}


class Restartable:
    """A broker a test can restart: ``url`` and ``restart()``."""

    def __init__(self, url: Callable[[], str], restart: Callable[[], None]) -> None:
        self.url = url
        self.restart = restart


@pytest.fixture(scope="module")
def private_rabbitmq() -> Iterator[RabbitMQNode]:
    scripts = find_server_scripts()
    if scripts is None:
        pytest.skip("no rabbitmq-server installed to start a private node to restart")
    node = RabbitMQNode(scripts)
    try:
        node.start()
    except RabbitMQUnavailable as e:
        pytest.skip(f"a private RabbitMQ node to restart did not start: {e}")
    yield node
    node.stop()


@pytest.fixture(
    params=[
        "bundled, clean stop",
        "bundled, kill -9",
        pytest.param("rabbitmq, stop_app/start_app", marks=pytest.mark.rabbitmq),
    ]
)
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Restartable]:
    if request.param.startswith("rabbitmq"):
        node: RabbitMQNode = request.getfixturevalue("private_rabbitmq")
        yield Restartable(lambda: node.url, node.restart_app)
        return
    process = BrokerProcess(tmp_path / "data", "--log-level", "WARNING").start()
    stop = process.stop if request.param.endswith("clean stop") else process.kill

    def restart() -> None:
        stop()
        process.start()

    yield Restartable(lambda: process.url, restart)
    process.kill()


def traffic(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str) -> None:
    """Publish BODIES, ack m0, nack m1 (requeued), fetch one more and hold it unacked."""
    channel.confirm_delivery()
    for body in BODIES:
        channel.basic_publish("", queue, body, PERSISTENT)
    method, _, _ = channel.basic_get(queue, auto_ack=False)
    assert method is not None
    channel.basic_ack(method.delivery_tag)
    method, _, _ = channel.basic_get(queue, auto_ack=False)
    assert method is not None
    channel.basic_nack(method.delivery_tag, requeue=True)
    method, _, _ = channel.basic_get(queue, auto_ack=False)
    assert method is not None


def recovered(url: str, queue: str) -> dict[bytes, tuple[bool, object]]:
    """body -> (redelivered, x-delivery-count) of every message of ``queue``, by basic.get."""
    out: dict[bytes, tuple[bool, object]] = {}
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        ch = conn.channel()
        for _ in range(len(BODIES) + 1):
            method, properties, body = ch.basic_get(queue, auto_ack=True)
            if method is None:
                break
            out[body] = (method.redelivered, (properties.headers or {}).get("x-delivery-count"))
        ch.queue_delete(queue)
    return out


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_only_messages_that_may_have_been_delivered_come_back_redelivered(
    broker: Restartable, queue_type: str, name: str
) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker.url()))
    channel = conn.channel()
    channel.queue_declare(name, durable=True, arguments=QUEUE_ARGS[queue_type])
    traffic(channel, name)
    broker.restart()
    assert recovered(broker.url(), name) == EXPECTED[queue_type]
