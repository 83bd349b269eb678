"""0-9 rules on queue overflow: over the memory watermark the broker stops publishers with
channel.flow and keeps every message; nothing is discarded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amqp_protocol.values import Content
from broker import Broker

from .flows import declare_queue, receive_file
from .peer import Peer

rule = pytest.mark.spec_rule

WATERMARK = 64_000
BODY = 16_000
COUNT = 8  # 128 kB: twice the watermark


def _publish(peer: Peer, content_class: str, queue: str, i: int) -> None:
    body = bytes([i]) * BODY
    if content_class == "basic":
        peer.send_content(
            1, "basic.publish", body, {"delivery_mode": 2}, exchange="", routing_key=queue
        )
    elif content_class == "file":
        # Not waiting for file.open-ok: the broker stops reading once it is over the mark.
        identifier = f"{queue}-{i}"
        peer.send(1, "file.open", identifier=identifier, content_size=len(body))
        peer.send_content(1, "file.stage", body)
        peer.send(1, "file.publish", exchange="", routing_key=queue, identifier=identifier)
    else:
        peer.send(
            1,
            "message.transfer",
            destination="",
            routing_key=queue,
            delivery_mode=2,
            body=Content(body),
        )


def _drain(peer: Peer, content_class: str, queue: str) -> list[bytes]:
    if content_class == "message":
        peer.call(1, "message.consume", queue=queue, destination="drain", no_ack=True)
        return [peer.expect(1, "message.transfer").method.body.data for _ in range(COUNT)]
    peer.call(1, f"{content_class}.consume", queue=queue, no_ack=True)
    if content_class == "file":
        return [receive_file(peer, 1)[1] for _ in range(COUNT)]
    return [peer.expect(1, "basic.deliver").body for _ in range(COUNT)]


@rule("basic:02", "basic:03", "file:02", "message:02", "message:03", "channel.flow:throttling")
@pytest.mark.parametrize("content_class", ["basic", "file", "message"])
def test_over_the_watermark_publishers_are_flowed_and_no_message_is_discarded(
    broker_with: Callable[..., Broker], name: str, content_class: str
) -> None:
    broker = broker_with(memory_high_watermark=WATERMARK)
    publisher, consumer = Peer(broker.url), Peer(broker.url)
    try:
        publisher.open_channel(1)
        consumer.open_channel(1)
        declare_queue(publisher, 1, name)
        for i in range(COUNT):
            _publish(publisher, content_class, name, i)
        stop: Any = publisher.expect(1, "channel.flow").method
        assert stop.active is False
        publisher.send(1, "channel.flow-ok", active=False)
        bodies = _drain(consumer, content_class, name)
        assert sorted(bodies) == [bytes([i]) * BODY for i in range(COUNT)]
        assert publisher.expect(1, "channel.flow").method.active is True
    finally:
        publisher.close()
        consumer.close()
