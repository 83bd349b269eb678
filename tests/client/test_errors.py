"""Errors the server signals: channel errors leave the connection usable, connection
errors end it for every channel."""

from __future__ import annotations

import uuid

import pytest

from amqp_protocol import errors
from amqp_spark.client import Channel, ChannelClosed, Connection, ConnectionClosed, connect

pytestmark = pytest.mark.timeout(60)


def test_missing_queue_closes_the_channel_with_404(
    connection: Connection, channel: Channel
) -> None:
    with pytest.raises(ChannelClosed) as e:
        channel.queue_declare("no-such-queue-here", passive=True)
    assert e.value.reply_code == 404
    assert isinstance(e.value.error, errors.NotFound)
    assert (e.value.class_id, e.value.method_id) == (50, 10)  # queue.declare
    assert not channel.is_open
    with pytest.raises(ChannelClosed):
        channel.queue_declare("", exclusive=True)
    assert connection.is_open
    with connection.channel() as fresh:
        assert fresh.queue_declare("", exclusive=True).queue


def test_unknown_delivery_tag_closes_the_channel_with_406(channel: Channel) -> None:
    channel.basic_ack(12345)  # asynchronous: the error surfaces at the next request
    with pytest.raises(ChannelClosed) as e:
        channel.queue_declare("", exclusive=True)
    assert e.value.reply_code == 406
    assert isinstance(e.value.error, errors.PreconditionFailed)


def test_connection_error_ends_every_channel(
    broker_url: str, connection: Connection, channel: Channel
) -> None:
    """basic.get on a stream queue is a connection error (540) on both brokers. (An unknown
    exchange type, used here before, is one on RabbitMQ 3.10 only: 4.0 closes the channel.)"""
    stream = f"stream-{uuid.uuid4().hex[:12]}"
    channel.queue_declare(stream, durable=True, arguments={"x-queue-type": "stream"})
    other = connection.channel()
    try:
        with pytest.raises(ConnectionClosed) as e:
            channel.basic_get(stream)
        assert e.value.reply_code == 540
        assert isinstance(e.value.error, errors.NotImplemented_)
        assert not connection.is_open
        with pytest.raises(ConnectionClosed):
            other.queue_declare("", exclusive=True)
        with pytest.raises(ConnectionClosed):
            connection.channel()
        connection.close()  # closing a dead connection is harmless
    finally:
        with connect(broker_url) as cleanup, cleanup.channel() as ch:
            ch.queue_delete(stream)
