"""After a restart, only messages that may have been delivered come back ``redelivered``, and
a quorum queue's messages keep ``x-delivery-count`` (the restart returns what was out).

The same traffic runs against the bundled broker (``python -m broker`` on a data directory,
stopped cleanly or with kill -9) and against a private RabbitMQ node of the restart tests (not
the session's: restarting it would cut the other tests' connections), restarted with
``rabbitmqctl stop_app``/``start_app``. Measured on RabbitMQ 4.0.5:

* classic: m0 acked, m1 nacked (back to the head) and fetched again, held unacked at the
  restart: m1 comes back redelivered, m2..m5 not;
* quorum: the same traffic (a nack puts m1 back at the head: 3.10 put it at the back and
  held m2 instead): m1 comes back redelivered with x-delivery-count 2 (the nack and the
  restart's return), m2..m5 not redelivered and without x-delivery-count (3.10 showed 0).

Before the restart the test waits until the broker has the traffic on disk
(``wait_until_on_disk``): an ack sent right before a kill -9 may be lost, on RabbitMQ too,
and m0 then comes back (redelivered, rightly).

The order of the quorum queue's messages after the restart is compared in
``test_quorum_restart.py``.
"""

from __future__ import annotations

import pika
import pytest

from .restarts import Restartable, wait_until_on_disk

PERSISTENT = pika.BasicProperties(delivery_mode=2)
BODIES = [b"m%d" % i for i in range(6)]
QUEUE_ARGS = {"classic": {}, "quorum": {"x-queue-type": "quorum"}}
#: body -> (redelivered, x-delivery-count of basic.get-ok: quorum queues only) after a restart
EXPECTED = {
    "classic": {b"m1": (True, None), **{b: (False, None) for b in BODIES[2:]}},
    "quorum": {b"m1": (True, 2), **{b: (False, None) for b in BODIES[2:]}},
}


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
    restartable: Restartable, queue_type: str, name: str
) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(restartable.url()))
    channel = conn.channel()
    channel.queue_declare(name, durable=True, arguments=QUEUE_ARGS[queue_type])
    traffic(channel, name)
    wait_until_on_disk(conn)
    restartable.restart()
    assert recovered(restartable.url(), name) == EXPECTED[queue_type]
