"""Requests answered later (``Channel.request_later``): what the Spark source asks queue
depths with while a window of deliveries streams in on the same connection."""

from __future__ import annotations

import time

import pytest

from amqp_spark.client import ClientError, Connection

pytestmark = pytest.mark.timeout(60)


def test_a_request_sent_now_is_answered_later(connection: Connection) -> None:
    with connection.channel() as ch:
        queue = str(ch.queue_declare("", exclusive=True).queue)
        ch.confirm_select()
        ch.basic_publish_batch("", [(queue, b"x", None)] * 3)
        # Confirmed means enqueued: RabbitMQ routes publishes to the queue process
        # asynchronously, so without confirms a later question can count fewer.
        ch.wait_for_confirms()

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
