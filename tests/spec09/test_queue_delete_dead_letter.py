"""Rule queue.delete:01: "The server SHOULD use a dead-letter queue to hold messages that were
pending on a deleted queue". A queue deleted by a 0-9 (or 0-8) queue.delete sends its pending
basic, file and message-class messages to its ``x-dead-letter-exchange``, ``x-death`` reason
``queue_deleted`` (our extension); stream content is dropped. A 0-9-1 client's queue.delete,
and a queue going by itself (auto-delete), drop the messages as RabbitMQ does."""

from __future__ import annotations

from typing import Any

import pika
import pytest

from amqp_protocol import SPEC_0_8

from .flows import declare_queue, publish_file, transfer
from .peer import Peer

rule = pytest.mark.spec_rule


def _dead_lettering_queue(peer: Peer, name: str, **fields: Any) -> str:
    """Declares ``name`` dead-lettering to a new queue through the default exchange; the
    dead-letter queue's name."""
    dlq = declare_queue(peer, 1, f"{name}-dlq")
    arguments = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
    declare_queue(peer, 1, name, arguments=arguments, **fields)
    return dlq


def _delete(peer: Peer, queue: str) -> int:
    """queue.delete; the message count of its delete-ok."""
    return int(peer.call(1, "queue.delete", queue=queue).message_count)


def _death_of_deletion(headers: dict[str, Any], queue: str) -> dict[str, Any]:
    (death,) = headers["x-death"]
    assert (death["reason"], death["queue"], death["count"]) == ("queue_deleted", queue, 1)
    assert headers["x-first-death-reason"] == "queue_deleted"
    return dict(death)


@rule("queue.delete:01")
def test_basic_messages_pending_on_a_deleted_queue_go_to_its_dead_letter_queue_in_order(
    peer: Peer, name: str
) -> None:
    dlq = _dead_lettering_queue(peer, name)
    for body in (b"first", b"second"):
        peer.send_content(1, "basic.publish", body, {"headers": {"h": 1}}, routing_key=name)
    assert _delete(peer, name) == 2
    got = []
    for _ in range(2):
        peer.send(1, "basic.get", queue=dlq, no_ack=True)
        ok = peer.expect(1, "basic.get-ok")
        got.append(ok.body)
        assert (ok.method.exchange, ok.method.routing_key) == ("", dlq)
        assert ok.properties.headers["h"] == 1
        death = _death_of_deletion(ok.properties.headers, name)
        assert (death["exchange"], death["routing-keys"]) == ("", [name])
    assert got == [b"first", b"second"]


@rule("queue.delete:01")
def test_file_messages_pending_on_a_deleted_queue_go_to_its_dead_letter_queue(
    peer: Peer, name: str
) -> None:
    dlq = _dead_lettering_queue(peer, name)
    publish_file(peer, 1, name, b"file body", f"id-{name}")
    assert _delete(peer, name) == 1
    peer.call(1, "file.consume", queue=dlq, consumer_tag="dead", no_ack=True)
    peer.expect(1, "file.open")
    peer.send(1, "file.open-ok", staged_size=0)
    stage = peer.expect(1, "file.stage")
    deliver = peer.expect(1, "file.deliver").method
    assert (stage.body, deliver.exchange, deliver.routing_key) == (b"file body", "", dlq)
    _death_of_deletion(stage.properties.headers, name)


@rule("queue.delete:01")
def test_message_class_messages_pending_on_a_deleted_queue_go_to_its_dead_letter_queue(
    peer: Peer, name: str
) -> None:
    dlq = _dead_lettering_queue(peer, name)
    transfer(peer, 1, name, b"transferred", application_headers={"h": "v"})
    assert _delete(peer, name) == 1
    peer.send(1, "message.get", queue=dlq, destination="g", no_ack=True)
    got = peer.expect(1, "message.transfer").method
    peer.expect(1, "message.ok")
    assert (got.body.data, got.exchange, got.routing_key) == (b"transferred", "", dlq)
    assert got.application_headers["h"] == "v"
    _death_of_deletion(got.application_headers, name)


def test_stream_content_pending_on_a_deleted_queue_is_dropped(peer: Peer, name: str) -> None:
    dlq = _dead_lettering_queue(peer, name)
    peer.send_content(1, "stream.publish", b"packet", exchange="", routing_key=name)
    assert _delete(peer, name) == 1
    assert peer.message_count(dlq) == 0


@rule("queue.delete:01")
def test_a_queue_deleted_over_0_8_dead_letters_its_pending_messages(
    peer_factory: Any, name: str
) -> None:
    peer = peer_factory(spec=SPEC_0_8)
    peer.open_channel(1)
    dlq = _dead_lettering_queue(peer, name)
    peer.send_content(1, "basic.publish", b"old", routing_key=name)
    assert _delete(peer, name) == 1
    peer.send(1, "basic.get", queue=dlq, no_ack=True)
    _death_of_deletion(peer.expect(1, "basic.get-ok").properties.headers, name)


def test_an_auto_deleted_queue_drops_its_messages_as_rabbitmq_does(peer: Peer, name: str) -> None:
    dlq = _dead_lettering_queue(peer, name, auto_delete=True)
    for body in (b"delivered", b"pending"):
        peer.send_content(1, "basic.publish", body, routing_key=name)
    peer.open_channel(2)
    peer.call(2, "basic.qos", prefetch_size=0, prefetch_count=1, global_=False)
    peer.call(2, "basic.consume", queue=name, consumer_tag="c")
    peer.expect(2, "basic.deliver")
    peer.call(2, "basic.cancel", consumer_tag="c")  # the last consumer: the queue goes
    peer.call(2, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    assert peer.message_count(dlq) == 0
    peer.send(1, "queue.declare", queue=name, passive=True)
    assert peer.channel_error(1) == 404


def test_a_0_9_1_client_deleting_a_queue_drops_its_messages_as_rabbitmq_does(
    broker_url: str, name: str
) -> None:
    params = pika.URLParameters(broker_url)
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        dlq = channel.queue_declare(f"{name}-dlq").method.queue
        arguments = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
        channel.queue_declare(name, arguments=arguments)
        # Confirmed, so both are in the queue when it is deleted: RabbitMQ routes a publish
        # asynchronously. (2 of ~20 runs of this test on 4.0.5 under load failed without
        # confirms; the failing assertion was not captured, so this is the likely cause.)
        channel.confirm_delivery()
        for body in (b"first", b"second"):
            channel.basic_publish("", name, body)
        assert channel.queue_delete(name).method.message_count == 2
        assert channel.queue_declare(dlq, passive=True).method.message_count == 0
        channel.queue_delete(dlq)
