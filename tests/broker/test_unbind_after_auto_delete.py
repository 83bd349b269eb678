"""Unbinding is idempotent as RabbitMQ 4 answers it (measured on 4.0.5): queue.unbind and
exchange.unbind whose queue or exchange is gone (auto-delete removed it) are unbind-ok, so
aio-pika's RPC pattern and its exchange-to-exchange tests can clean up after auto-delete.
An auto-delete exchange goes with its last binding as a source, and takes the bindings to
it along, which may leave its own source without bindings: that one goes too."""

from __future__ import annotations

from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker


def _exists(connection: pika.BlockingConnection, kind: str, name: str) -> bool:
    channel = connection.channel()
    declare: Any = channel.exchange_declare if kind == "exchange" else channel.queue_declare
    try:
        declare(name, passive=True)
    except ChannelClosedByBroker as e:
        assert e.reply_code == 404
        return False
    channel.close()
    return True


def test_auto_delete_exchanges_go_in_a_chain_and_unbinding_them_after_is_ok(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    source, destination = f"{name}-source", f"{name}-destination"
    channel.exchange_declare(source, "direct", auto_delete=True)
    channel.exchange_declare(destination, "direct", auto_delete=True)
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.queue_bind(queue, destination, "k")
    channel.exchange_bind(destination, source, "k")
    channel.queue_unbind(queue, destination, "k")
    assert not _exists(connection, "exchange", destination)
    assert not _exists(connection, "exchange", source)
    channel.exchange_unbind(destination, source, "k")  # unbind-ok, not 404
    channel.queue_unbind(queue, destination, "k")


def test_unbinding_a_queue_auto_delete_removed_is_ok(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    queue = channel.queue_declare("", auto_delete=True).method.queue
    channel.queue_bind(queue, "amq.direct", name)
    channel.basic_cancel(channel.basic_consume(queue, lambda *_: None))
    assert not _exists(connection, "queue", queue)
    channel.queue_unbind(queue, "amq.direct", name)
    channel.queue_delete(queue)


def test_unbinding_the_last_declared_queue_when_there_is_none_is_404(
    channel: BlockingChannel,
) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_unbind("", "amq.direct", "k")
    assert (e.value.reply_code, e.value.reply_text) == (
        404,
        "NOT_FOUND - no previously declared queue",
    )


def test_binding_to_a_missing_source_names_the_source_first(
    channel: BlockingChannel, name: str
) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_bind(f"{name}-no-queue", f"{name}-no-exchange", "k")
    assert e.value.reply_code == 404 and f"'{name}-no-exchange'" in e.value.reply_text
