"""Channels opened with ``encoded_deliveries``, and requests answered later
(``request_later``): what the Spark source's runner consumes with."""

from __future__ import annotations

import time

import pytest

from amqp_spark.client import Channel, ClientError, Connection
from amqp_spark.client.delivery import EncodedDelivery
from amqp_spark.protocol import SPEC_0_9_1
from amqp_spark.protocol.contents import decode_contents

pytestmark = pytest.mark.timeout(60)

BIG = bytes(range(256)) * 1000  #: more than one frame (frame-max 131072)


def _collect(ch: Channel, count: int, timeout: float = 10.0) -> list[EncodedDelivery]:
    got: list[EncodedDelivery] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        first = ch.next_encoded_delivery(timeout=0.2)
        if first is not None:
            got += [first, *ch.drain_encoded_deliveries(max_count=count)]
    return got


def test_encoded_deliveries_decode_to_the_messages_published(connection: Connection) -> None:
    bodies = [b"%d" % i for i in range(500)] + [b"", BIG]
    with connection.channel() as pub:
        queue = str(pub.queue_declare("", exclusive=True).queue)
        pub.basic_publish_batch(
            "", [(queue, b, {"message_id": str(i)}) for i, b in enumerate(bodies)]
        )
        ch = connection.channel(encoded_deliveries=True)
        ch.basic_consume(queue)

        got = _collect(ch, len(bodies))

        decoded = [c for d in got for c in decode_contents(SPEC_0_9_1, d.frames)]
        assert [body for _, _, body in decoded] == bodies
        assert [p.message_id for _, p, _ in decoded] == [str(i) for i in range(len(bodies))]
        assert [d.delivery_tag for d in got] == [m.delivery_tag for m, _, _ in decoded]
        assert [d.body_size for d in got] == [len(b) for b in bodies]
        ch.basic_ack(got[-1].delivery_tag, multiple=True)
        assert int(pub.queue_declare(queue, passive=True).message_count) == 0


def test_a_channel_is_read_as_the_kind_it_was_opened(connection: Connection) -> None:
    encoded, plain = connection.channel(encoded_deliveries=True), connection.channel()

    with pytest.raises(ClientError, match="drain_encoded_deliveries"):
        encoded.drain_deliveries()
    with pytest.raises(ClientError, match="next_delivery"):
        plain.next_encoded_delivery(timeout=0)


def test_a_request_sent_now_is_answered_later(connection: Connection) -> None:
    with connection.channel() as ch:
        queue = str(ch.queue_declare("", exclusive=True).queue)
        ch.basic_publish_batch("", [(queue, b"x", None)] * 3)
        ch.queue_declare(queue, passive=True)  # the publishes are in before the question

        pending = ch.request_later("queue.declare", queue=queue, passive=True)
        deadline = time.monotonic() + 10
        while (answer := pending.result()) is None and time.monotonic() < deadline:
            time.sleep(0.01)

        assert answer is not None and answer.message_count == 3


def test_a_request_later_on_a_channel_that_closes_raises_its_error(
    connection: Connection,
) -> None:
    ch = connection.channel()
    pending = ch.request_later("queue.declare", queue="no-such-queue-here", passive=True)
    deadline = time.monotonic() + 10
    with pytest.raises(ClientError, match="404|NOT_FOUND"):
        while pending.result() is None and time.monotonic() < deadline:
            time.sleep(0.01)
