"""Rule basic:04: the server MAY overflow non-persistent basic messages to persistent
storage. A queue past its in-memory threshold keeps the rest of its messages in spill files,
also on a broker without a data directory, and delivers them all back in order."""

from __future__ import annotations

import pytest

from amqp_spark.client import connect
from amqp_spark.protocol import SPEC_0_9
from broker import Broker
from broker.model.queues import ReadyMessages

THRESHOLD = 200
COUNT = THRESHOLD * 5
BODY = b"x" * 100


@pytest.mark.spec_rule("basic:04")
def test_non_persistent_messages_past_the_threshold_go_to_disk_and_come_back_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ReadyMessages, "SPILL_AFTER_MESSAGES", THRESHOLD)
    with Broker() as broker, connect(broker.url, spec=SPEC_0_9) as conn:
        ch = conn.channel()
        ch.queue_declare("overflowing")
        for i in range(COUNT):
            ch.basic_publish("", "overflowing", BODY + b"%d" % i, {"delivery_mode": 1})
        assert ch.queue_declare("overflowing", passive=True).message_count == COUNT
        server = broker._server
        assert server is not None
        assert server.vhosts["/"].queues["overflowing"].ready.spilled == COUNT - THRESHOLD
        assert server.memory.used <= THRESHOLD * (len(BODY) + 4)  # only the in-memory head
        bodies = []
        for _ in range(COUNT):
            delivery = ch.basic_get("overflowing", no_ack=True)
            assert delivery is not None
            bodies.append(delivery.body)
    assert bodies == [BODY + b"%d" % i for i in range(COUNT)]
