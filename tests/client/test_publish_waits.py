"""How long a publisher waits: ``channel.timeout`` for confirms to make room, but
``connection.blocked_timeout`` while the server blocks the connection, also when the block
begins while the publisher already waits for confirms (a fast publisher at its
``max_in_flight`` is where a resource alarm usually finds it).

The bundled broker blocks publishers above its memory watermark (bytes of queued bodies)
and stops reading their sockets, so the confirms of what they sent meanwhile stop too.
"""

from __future__ import annotations

import threading
import time

import pytest

from amqp_spark.client import connect
from broker import Broker
from tests.client.conftest import message_count

pytestmark = pytest.mark.timeout(60)

BODY = bytes(50_000)
WATERMARK = 300_000  #: the seventh body crosses it


def test_a_block_while_waiting_for_confirms_is_bounded_by_blocked_timeout() -> None:
    with (
        Broker(config={"memory_high_watermark": WATERMARK}) as broker,
        connect(broker.url) as conn,
        conn.channel() as ch,
        connect(broker.url) as other,
        other.channel() as purger,
    ):
        queue = ch.queue_declare("", auto_delete=True).queue
        ch.confirm_select()
        ch.max_in_flight = 2
        ch.timeout = 0.3
        conn.blocked_timeout = 30
        # The block lifts when the queue is emptied; the bodies left then stay below it.
        purge = threading.Timer(1.5, purger.queue_purge, (queue,))
        purge.start()
        try:
            began = time.monotonic()
            # One write (nothing is outstanding yet): the broker blocks after reading seven.
            ch.basic_publish_batch("", [(queue, BODY, None)] * 11)
            # Waits for room at once; the block begins while it waits.
            ch.basic_publish("", queue, BODY)
            ch.wait_for_confirms(timeout=30)
            held = time.monotonic() - began
        finally:
            purge.join()
        assert held >= 1.0, "the publishers were not held by the block"
        assert not conn.blocked
        assert 0 < message_count(ch, queue) <= 12 - 7
