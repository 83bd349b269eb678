"""Rules basic:05, message:05 and stream:01: over ``x-max-length`` a queue declared with
``x-overflow: drop-lowest-priority`` discards (or, with a dead-letter exchange,
dead-letters) the oldest message of the lowest priority present, not the head."""

from __future__ import annotations

from typing import Any

import pytest

from .flows import declare_queue, get_body, receive_transfer, transfer
from .peer import Peer

#: (body, priority) in publishing order; with room for three, both "low" ones must go.
PUBLISHED = [(b"low-a", 1), (b"mid-a", 5), (b"low-b", 1), (b"top", 9), (b"mid-b", 5)]
KEPT_IN_DELIVERY_ORDER = [b"top", b"mid-a", b"mid-b"]


def _limited_queue(peer: Peer, name: str, **extra: Any) -> None:
    arguments = {"x-max-length": 3, "x-overflow": "drop-lowest-priority", **extra}
    declare_queue(peer, 1, name, arguments=arguments)


@pytest.mark.spec_rule("basic:05")
def test_basic_messages_over_the_limit_are_dead_lettered_lowest_priority_first(
    peer: Peer, name: str
) -> None:
    dlq = declare_queue(peer, 1, f"{name}-dlq")
    _limited_queue(
        peer,
        name,
        **{"x-max-priority": 9, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
    )
    for body, priority in PUBLISHED:
        peer.send_content(1, "basic.publish", body, {"priority": priority}, routing_key=name)
    assert [get_body(peer, 1, name) for _ in range(3)] == KEPT_IN_DELIVERY_ORDER
    assert [get_body(peer, 1, dlq) for _ in range(2)] == [b"low-a", b"low-b"]
    peer.send(1, "basic.get", queue=name, no_ack=True)
    peer.expect(1, "basic.get-empty")


@pytest.mark.spec_rule("basic:05")
def test_without_priorities_the_oldest_message_goes_as_with_drop_head(
    peer: Peer, name: str
) -> None:
    _limited_queue(peer, name)
    for body in (b"1", b"2", b"3", b"4"):
        peer.send_content(1, "basic.publish", body, routing_key=name)
    assert [get_body(peer, 1, name) for _ in range(3)] == [b"2", b"3", b"4"]


@pytest.mark.spec_rule("message:05")
def test_messages_over_the_limit_are_discarded_lowest_priority_first(peer: Peer, name: str) -> None:
    _limited_queue(peer, name)
    for body, priority in PUBLISHED:
        transfer(peer, 1, name, body, priority=priority)
    peer.call(1, "message.consume", queue=name, destination="d", no_ack=True)
    received = [receive_transfer(peer, 1).body.data for _ in range(3)]
    assert received == KEPT_IN_DELIVERY_ORDER
    peer.nothing(1, "message.transfer")


@pytest.mark.spec_rule("stream:01")
def test_stream_messages_over_the_limit_are_discarded_low_priority_first(
    peer: Peer, name: str
) -> None:
    _limited_queue(peer, name)
    for body, priority in PUBLISHED:
        peer.send_content(
            1, "stream.publish", body, {"priority": priority}, exchange="", routing_key=name
        )
    peer.call(1, "stream.consume", queue=name, consumer_tag="s")
    received = [peer.expect(1, "stream.deliver").body for _ in range(3)]
    assert received == KEPT_IN_DELIVERY_ORDER
    peer.nothing(1, "stream.deliver")
