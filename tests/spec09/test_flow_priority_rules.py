"""0-9 rules (mostly SHOULD and MAY) on channel flow, priority levels, exclusive consumers,
mandatory and immediate publishing, and persistent basic messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amqp_protocol import SPEC_0_9
from amqp_protocol.values import Content
from amqp_spark.client import connect
from broker import Broker

from .flows import declare_queue, publish_file, receive_file, receive_transfer, transfer
from .peer import Peer

rule = pytest.mark.spec_rule


def _publish(peer: Peer, queue: str, body: bytes, **properties: object) -> None:
    peer.send_content(1, "basic.publish", body, properties, exchange="", routing_key=queue)


@rule("channel.flow:initial-state")
def test_a_new_channel_is_active(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name, no_ack=True)
    _publish(peer, name, b"flows at once")
    assert peer.expect(1, "basic.deliver").body == b"flows at once"


@rule("channel.flow:bidirectional")
def test_the_server_stops_and_restarts_deliveries_on_the_clients_flow(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name, no_ack=True)
    assert peer.call(1, "channel.flow", active=False).active is False
    _publish(peer, name, b"held")
    peer.nothing(1, "basic.deliver")
    assert peer.call(1, "channel.flow", active=True).active is True
    assert peer.expect(1, "basic.deliver").body == b"held"


@rule("basic:07")
def test_ten_basic_priority_levels(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name, arguments={"x-max-priority": 9})
    for level in range(10):
        _publish(peer, name, bytes([level]), priority=level)
    peer.call(1, "basic.consume", queue=name, no_ack=True)
    received = [peer.expect(1, "basic.deliver").body for _ in range(10)]
    assert received == [bytes([level]) for level in reversed(range(10))]


@rule("message:07")
def test_ten_message_priority_levels(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    for level in range(10):
        transfer(peer, 1, name, bytes([level]), priority=level)
    peer.call(1, "message.consume", queue=name, destination="d", no_ack=True)
    received = [peer.expect(1, "message.transfer").method.body for _ in range(10)]
    assert received == [Content(bytes([level])) for level in reversed(range(10))]


@rule("basic.consume.exclusive:01", "message.consume.exclusive:01")
@pytest.mark.parametrize("content_class", ["basic", "message"])
def test_no_exclusive_consumer_on_a_queue_that_has_consumers(
    peer: Peer, name: str, content_class: str
) -> None:
    declare_queue(peer, 1, name)
    tag_field = "destination" if content_class == "message" else "consumer_tag"
    peer.call(1, f"{content_class}.consume", queue=name, **{tag_field: "first"})
    peer.open_channel(2)
    peer.send(2, f"{content_class}.consume", queue=name, exclusive=True, **{tag_field: "excl"})
    assert peer.error(2)[1] in (403, 405)


@rule("basic.publish.mandatory:01")
def test_an_unroutable_mandatory_basic_message_is_returned(peer: Peer, name: str) -> None:
    peer.send_content(
        1, "basic.publish", b"back", exchange="amq.direct", routing_key=name, mandatory=True
    )
    returned = peer.expect(1, "basic.return")
    assert (returned.method.reply_code, returned.body) == (312, b"back")


@rule("basic:01")
def test_a_persistent_basic_message_survives_a_restart(
    restarted: Callable[[], Broker],
) -> None:
    with connect(restarted().url, spec=SPEC_0_9) as conn:
        ch = conn.channel()
        ch.queue_declare("kept", durable=True)
        ch.basic_publish("", "kept", b"persistent", {"delivery_mode": 2})
        ch.basic_publish("", "kept", b"transient", {"delivery_mode": 1})
        ch.tx_select()
        ch.tx_commit()  # commit-ok comes once the store has synced
    with connect(restarted().url, spec=SPEC_0_9) as conn:
        ch = conn.channel()
        delivery = ch.basic_get("kept", no_ack=True)
        assert delivery is not None and delivery.body == b"persistent"
        assert ch.basic_get("kept", no_ack=True) is None


def _immediate(peer: Peer, content_class: str, queue: str, body: bytes) -> None:
    if content_class == "file":
        publish_file(peer, 1, queue, body, f"imm-{queue}-{body.hex()}", immediate=True)
    elif content_class == "message":
        peer.send(
            1,
            "message.transfer",
            destination="",
            routing_key=queue,
            immediate=True,
            body=Content(body),
        )
    else:
        fields: dict[str, Any] = {"exchange": "", "routing_key": queue, "immediate": True}
        peer.send_content(1, f"{content_class}.publish", body, **fields)


def _received(peer: Peer, content_class: str) -> bytes:
    if content_class == "file":
        return receive_file(peer, 1)[1]
    if content_class == "message":
        return bytes(receive_transfer(peer, 1).body.data)
    return bytes(peer.expect(1, f"{content_class}.deliver").body)


@rule(
    "basic.publish.immediate:01",
    "file.publish.immediate:01",
    "stream.publish.immediate:01",
    "message.transfer.immediate:01",
    "domain.reject-code:01",
)
@pytest.mark.parametrize("content_class", ["basic", "file", "stream", "message"])
def test_an_immediate_message_without_a_ready_consumer_comes_back(
    peer: Peer, name: str, content_class: str
) -> None:
    declare_queue(peer, 1, name)
    _immediate(peer, content_class, name, b"nobody")
    if content_class == "message":
        rejected = peer.expect(1, "message.reject").method
        assert (rejected.code, rejected.text) == (1, "NO_CONSUMERS")
    else:
        returned = peer.expect(1, f"{content_class}.return")
        assert (returned.method.reply_code, returned.body) == (313, b"nobody")
    tag_field = "destination" if content_class == "message" else "consumer_tag"
    no_ack: dict[str, Any] = (
        {} if content_class == "stream" else {"no_ack": True}
    )  # streams are never acked
    peer.call(1, f"{content_class}.consume", queue=name, **{tag_field: "c"}, **no_ack)
    _immediate(peer, content_class, name, b"taken")
    assert _received(peer, content_class) == b"taken"
