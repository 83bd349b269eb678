"""What a persistent message keeps across a restart of the bundled broker besides its
content: the ``BCC`` keys it was published with (dead-lettering routes by them again) and
its expiry deadline (its TTL counts from the publish, not from the recovery).

These are bundled-broker tests only: RabbitMQ behaves this way too, but the tests cannot
restart the RabbitMQ node they share, so they cannot check it there."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pika
import pytest

from broker import Broker
from tests.durability.test_restart import connect, get_all

TTL_MS = 1000


def test_a_recovered_message_dead_letters_to_its_bcc_queues(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare("dlx", "direct", durable=True)
        ch.queue_declare("work", durable=True, arguments={"x-dead-letter-exchange": "dlx"})
        ch.queue_bind("work", "amq.direct", "work")
        for queue, key in (("by-key", "work"), ("by-bcc", "secret")):
            ch.queue_declare(queue, durable=True)
            ch.queue_bind(queue, "dlx", key)
        props = pika.BasicProperties(delivery_mode=2, headers={"BCC": ["secret"]})
        ch.basic_publish("amq.direct", "work", b"blind", props)
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        method, _, body = ch.basic_get("work", auto_ack=False)
        assert method is not None and not method.redelivered and body == b"blind"
        ch.basic_reject(method.delivery_tag, requeue=False)
        assert get_all(ch, "by-key") == [(b"blind", False)]
        method, props, body = ch.basic_get("by-bcc", auto_ack=True)
        assert method is not None and body == b"blind"
        assert "BCC" not in props.headers
        assert props.headers["x-death"][0]["reason"] == "rejected"


@pytest.mark.parametrize(
    ("queue_arguments", "expiration"),
    [({}, str(TTL_MS)), ({"x-message-ttl": TTL_MS}, None)],
    ids=["per-message-ttl", "queue-ttl"],
)
def test_a_message_whose_ttl_ran_out_while_the_broker_was_down_expires_at_recovery(
    tmp_path: Path, queue_arguments: dict[str, Any], expiration: str | None
) -> None:
    data = str(tmp_path / "data")
    arguments = {"x-dead-letter-exchange": "dlx", **queue_arguments}
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare("dlx", "fanout", durable=True)
        ch.queue_declare("expired", durable=True)
        ch.queue_bind("expired", "dlx")
        ch.queue_declare("short", durable=True, arguments=arguments)
        published = time.monotonic()
        late = pika.BasicProperties(delivery_mode=2, expiration=expiration)
        ch.basic_publish("", "short", b"late", late)
        if expiration is not None:  # and one whose deadline is far off: it stays
            ch.basic_publish(
                "", "short", b"kept", pika.BasicProperties(delivery_mode=2, expiration="600000")
            )
    time.sleep(max(0.0, published + 1.5 * TTL_MS / 1000 - time.monotonic()))
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        method, props, body = ch.basic_get("expired", auto_ack=True)
        assert method is not None and body == b"late"
        assert props.headers["x-death"][0]["reason"] == "expired"
        assert get_all(ch, "short") == ([(b"kept", False)] if expiration else [])
