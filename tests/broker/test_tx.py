"""Transactions: publishes and acks take effect on commit, vanish on rollback; tx and
confirm modes exclude each other."""

from __future__ import annotations

import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker

from .helpers import get_all


def test_tx_publish_is_visible_only_after_commit(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.tx_select()
    channel.basic_publish("", name, b"a")
    assert channel.queue_declare(name, passive=True).method.message_count == 0
    channel.tx_commit()
    assert channel.queue_declare(name, passive=True).method.message_count == 1


def test_tx_rollback_discards_publishes_and_acks(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.basic_publish("", name, b"kept")
    channel.tx_select()
    method, _, _ = channel.basic_get(name)
    channel.basic_ack(method.delivery_tag)
    channel.basic_publish("", name, b"dropped")
    channel.tx_rollback()
    channel.basic_recover(requeue=True)
    channel.tx_commit()
    assert get_all(channel, name) == [b"kept"]


def test_confirm_after_tx_is_406(channel: BlockingChannel) -> None:
    channel.tx_select()
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.confirm_delivery()
    assert e.value.reply_code == 406


def test_commit_without_select_is_406(channel: BlockingChannel) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.tx_commit()
    assert e.value.reply_code == 406
