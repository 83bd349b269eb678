"""The everyday path with pika's BlockingConnection: declare, publish, get, consume, settle,
prefetch and publisher confirms. Every test runs against the bundled broker and RabbitMQ."""

from __future__ import annotations

import amqp
import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker, UnroutableError

from .helpers import drain, get_all


def test_publish_then_get_returns_message_and_remaining_count(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    for i in range(3):
        channel.basic_publish("", name, b"m%d" % i, pika.BasicProperties(content_type="text/plain"))
    method, props, body = channel.basic_get(name, auto_ack=True)
    assert body == b"m0"
    assert method.message_count == 2
    assert props.content_type == "text/plain"
    assert method.redelivered is False
    assert channel.basic_get(name, auto_ack=True)[2] == b"m1"


def test_get_on_empty_queue_is_get_empty(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    assert channel.basic_get(name) == (None, None, None)


def test_declare_ok_reports_message_and_consumer_counts(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.confirm_delivery()  # RabbitMQ counts a message once it is confirmed
    channel.basic_publish("", name, b"x")
    channel.basic_publish("", name, b"y")
    ok = channel.queue_declare(name, passive=True)
    assert ok.method.message_count == 2
    assert ok.method.consumer_count == 0


def test_consume_delivers_in_order_with_properties(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    props = pika.BasicProperties(headers={"k": "v", "n": 7}, message_id="id-1", delivery_mode=2)
    for i in range(10):
        channel.basic_publish("", name, b"%d" % i, props)
    seen = []

    def on_message(
        ch: BlockingChannel, method: pika.spec.Basic.Deliver, p: pika.BasicProperties, body: bytes
    ) -> None:
        seen.append((body, p.headers, p.message_id, p.delivery_mode, method.routing_key))
        ch.basic_ack(method.delivery_tag)

    channel.basic_consume(name, on_message)
    while len(seen) < 10:
        connection.process_data_events(0.1)
    assert [s[0] for s in seen] == [b"%d" % i for i in range(10)]
    assert seen[0][1:] == ({"k": "v", "n": 7}, "id-1", 2, name)


def test_large_body_is_split_into_frames_and_reassembled(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    body = bytes(range(256)) * 4096  # 1 MiB, many frames
    channel.basic_publish("", name, body)
    assert channel.basic_get(name, auto_ack=True)[2] == body


def test_nack_with_requeue_redelivers_with_redelivered_flag(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.basic_publish("", name, b"x")
    method, _, _ = channel.basic_get(name)
    channel.basic_nack(method.delivery_tag, requeue=True)
    again, _, body = channel.basic_get(name)
    assert body == b"x" and again.redelivered is True
    channel.basic_reject(again.delivery_tag, requeue=False)
    assert channel.basic_get(name) == (None, None, None)


def test_ack_multiple_settles_everything_up_to_the_tag(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    for i in range(4):
        channel.basic_publish("", name, b"%d" % i)
    tags = [channel.basic_get(name)[0].delivery_tag for _ in range(4)]
    channel.basic_ack(tags[2], multiple=True)
    channel.basic_recover(requeue=True)
    assert get_all(channel, name) == [b"3"]


def test_unacked_messages_return_to_queue_when_channel_closes(
    connection: pika.BlockingConnection, name: str
) -> None:
    ch1 = connection.channel()
    ch1.queue_declare(name)
    ch1.basic_publish("", name, b"x")
    ch1.basic_get(name)
    ch1.close()
    ch2 = connection.channel()
    method, _, body = ch2.basic_get(name, auto_ack=True)
    assert body == b"x" and method.redelivered
    ch2.queue_delete(name)


def test_unknown_delivery_tag_closes_channel_with_406(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.basic_ack(99)
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, passive=True)
    assert e.value.reply_code == 406
    assert "unknown delivery tag 99" in e.value.reply_text


def test_prefetch_count_limits_unacked_deliveries_per_consumer(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    for i in range(10):
        channel.basic_publish("", name, b"%d" % i)
    channel.basic_qos(prefetch_count=3)
    got: list[int] = []
    channel.basic_consume(name, lambda ch, m, p, b: got.append(m.delivery_tag))
    for _ in range(10):
        connection.process_data_events(0.05)
    assert len(got) == 3
    channel.basic_ack(got[-1], multiple=True)
    for _ in range(10):
        connection.process_data_events(0.05)
    assert len(got) == 6


def test_global_prefetch_is_shared_by_the_channels_consumers(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    for q in (name + "a", name + "b"):
        channel.queue_declare(q, auto_delete=True)
        for i in range(5):
            channel.basic_publish("", q, b"%d" % i)
    channel.basic_qos(prefetch_count=4, global_qos=True)
    got: list[int] = []
    for q in (name + "a", name + "b"):
        channel.basic_consume(q, lambda ch, m, p, b: got.append(m.delivery_tag))
    for _ in range(10):
        connection.process_data_events(0.05)
    assert len(got) == 4


def test_confirms_ack_every_publish(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.confirm_delivery()
    for i in range(50):
        channel.basic_publish("", name, b"%d" % i)  # raises if nacked
    assert channel.queue_declare(name, passive=True).method.message_count == 50


def test_mandatory_unroutable_publish_is_returned(channel: BlockingChannel, name: str) -> None:
    channel.confirm_delivery()
    with pytest.raises(UnroutableError) as e:
        channel.basic_publish("", name, b"nowhere", mandatory=True)
    assert e.value.messages[0].method.reply_code == 312
    assert e.value.messages[0].method.reply_text == "NO_ROUTE"


def test_immediate_publish_is_refused_with_540(connection: pika.BlockingConnection) -> None:
    channel = connection.channel()
    frame = pika.spec.Basic.Publish(exchange="", routing_key="q", immediate=True)
    channel._impl._send_method(frame, (pika.BasicProperties(), b"x"))  # pika has no immediate=
    with pytest.raises(ConnectionClosedByBroker) as e:
        connection.process_data_events(1.0)
        channel.queue_declare("", exclusive=True)
    assert e.value.reply_code == 540


def test_consume_with_no_ack_delivers_without_settling(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    for i in range(5):
        channel.basic_publish("", name, b"%d" % i)
    assert drain(connection, channel, name, 5) == [b"%d" % i for i in range(5)]


def test_consumer_priority_receives_first(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    got: list[str] = []
    channel.basic_qos(prefetch_count=100)
    channel.basic_consume(name, lambda ch, m, p, b: got.append("low"), arguments={"x-priority": 1})
    channel.basic_consume(name, lambda ch, m, p, b: got.append("high"), arguments={"x-priority": 5})
    for i in range(5):
        channel.basic_publish("", name, b"%d" % i)
    for _ in range(20):
        connection.process_data_events(0.05)
        if len(got) == 5:
            break
    assert got == ["high"] * 5


def test_reusing_consumer_tag_is_connection_error_530(broker_url: str, name: str) -> None:
    params = pika.URLParameters(broker_url)
    conn = amqp.Connection(f"{params.host}:{params.port}", userid="guest", password="guest")
    conn.connect()
    ch = conn.channel()
    ch.queue_declare(name, auto_delete=True)
    ch.basic_consume(name, consumer_tag="dup", callback=lambda m: None)
    with pytest.raises(amqp.exceptions.NotAllowed) as e:
        ch.basic_consume(name, consumer_tag="dup", callback=lambda m: None)
    assert e.value.reply_code == 530
    assert not conn.connected
