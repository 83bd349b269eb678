"""What a queue holds once the source's consumers are gone.

When a query run ends, its connection closes and the broker requeues whatever it left
unacked; the ready count only says what was acked after that. Waiting for the queue's
consumers to be gone (the broker removes them when it requeues their messages) avoids
reading the count too early, when unacked messages are not back yet.
"""

from __future__ import annotations

import time

from tests.spark.conftest import Broker


def ready_once_unconsumed(broker: Broker, queue: str, timeout: float = 30.0) -> int:
    """The ready count of ``queue`` once it has no consumer (raises if one stays longer
    than ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    ok = broker.ch.queue_declare(queue, passive=True)
    while ok.consumer_count and time.monotonic() < deadline:
        time.sleep(0.1)
        ok = broker.ch.queue_declare(queue, passive=True)
    assert ok.consumer_count == 0, f"{queue} still has {ok.consumer_count} consumer(s)"
    return int(ok.message_count)
