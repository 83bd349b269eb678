"""Publishing: confirms, pipelining, batches, returns and nacks."""

from __future__ import annotations

import pytest

from amqp_spark.client import Channel, ClientError, PublishNacked, PublishReturned
from tests.client.conftest import message_count

pytestmark = pytest.mark.timeout(120)


def test_ten_thousand_confirmed_publishes_all_arrive(channel: Channel, queue: str) -> None:
    channel.confirm_select()
    seqs = [channel.basic_publish("", queue, b"m%d" % i) for i in range(10_000)]
    channel.wait_for_confirms(timeout=60)
    assert seqs == list(range(1, 10_001))
    assert message_count(channel, queue) == 10_000


def test_publishing_never_exceeds_max_in_flight(channel: Channel, queue: str) -> None:
    channel.confirm_select()
    channel.max_in_flight = 5
    for i in range(200):
        channel.basic_publish("", queue, b"%d" % i)
        assert channel.unconfirmed <= 5
    channel.wait_for_confirms()
    assert channel.unconfirmed == 0
    assert message_count(channel, queue) == 200


def test_batch_publish_is_confirmed_and_keeps_order_and_properties(
    channel: Channel, queue: str
) -> None:
    channel.confirm_select()
    channel.max_in_flight = 100  # smaller than the batch: it waits for an empty pipeline
    channel.basic_publish("", queue, b"before")
    batch = [(queue, b"%d" % i, {"message_id": str(i), "headers": {"i": i}}) for i in range(500)]
    seqs = channel.basic_publish_batch("", batch)
    channel.wait_for_confirms()
    assert seqs == range(2, 502)
    assert channel.basic_get(queue, no_ack=True).body == b"before"  # type: ignore[union-attr]
    for i in range(500):
        d = channel.basic_get(queue, no_ack=True)
        assert d is not None
        assert (d.body, d.properties.fields()["message_id"], d.properties.fields()["headers"]) == (
            b"%d" % i,
            str(i),
            {"i": i},
        )


def test_body_larger_than_frame_max_round_trips(channel: Channel, queue: str) -> None:
    body = bytes(range(256)) * 4096  # 1 MiB: many body frames
    channel.confirm_select()
    channel.basic_publish("", queue, body, {"content_type": "application/octet-stream"})
    channel.wait_for_confirms()
    d = channel.basic_get(queue, no_ack=True)
    assert d is not None and d.body == body
    assert d.properties.fields()["content_type"] == "application/octet-stream"


def test_unroutable_mandatory_message_raises_publish_returned(channel: Channel, queue: str) -> None:
    channel.confirm_select()
    channel.basic_publish("amq.direct", "no-such-binding", b"lost", mandatory=True)
    channel.basic_publish("", queue, b"routed", mandatory=True)
    with pytest.raises(PublishReturned) as e:
        channel.wait_for_confirms()
    assert (e.value.count, e.value.reply_code, e.value.reply_text) == (1, 312, "NO_ROUTE")
    assert e.value.returns[0].body == b"lost"
    channel.wait_for_confirms()  # reported once
    assert message_count(channel, queue) == 1


def test_rejected_publishes_raise_publish_nacked(channel: Channel) -> None:
    args = {"x-max-length": 1, "x-overflow": "reject-publish"}
    queue = channel.queue_declare("", exclusive=True, arguments=args).queue
    channel.confirm_select()
    for body in (b"kept", b"refused", b"refused too"):
        channel.basic_publish("", queue, body)
    with pytest.raises(PublishNacked) as e:
        channel.wait_for_confirms()
    assert e.value.sequence_numbers == [2, 3]


def test_wait_for_confirms_needs_confirm_mode(channel: Channel) -> None:
    with pytest.raises(ClientError, match="confirm_select"):
        channel.wait_for_confirms()


def test_publish_without_confirms_returns_zero(channel: Channel, queue: str) -> None:
    assert channel.basic_publish("", queue, b"x") == 0
    assert channel.basic_publish_batch("", [(queue, b"y", None)]) == range(0)
    assert channel.basic_get(queue, no_ack=True) is not None
