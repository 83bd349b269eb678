"""Dead-lettering a message published with ``CC`` and ``BCC`` headers (sender-selected
distribution). Without a dead-letter routing key the message goes to the dead-letter exchange
with every key it was published with (its routing key, ``CC`` and ``BCC`` keys, though
``BCC`` is no longer in its headers); with one, by that key alone, its ``CC`` header kept
(RabbitMQ 4.0; 3.10 removed it). ``x-death`` records the published key and the ``CC`` keys
either way. Each test runs on the bundled broker and on RabbitMQ 4.0."""

from __future__ import annotations

from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from testbed.waiting import holds_within

HEADERS = {"CC": ["cc-key"], "BCC": ["bcc-key"], "n": 1}


@pytest.fixture
def exchanges(channel: BlockingChannel, name: str) -> tuple[str, str]:
    """A direct exchange to publish to and a direct dead-letter exchange."""
    channel.confirm_delivery()
    for suffix in ("-in", "-dlx"):
        channel.exchange_declare(name + suffix, "direct", auto_delete=True)
    return name + "-in", name + "-dlx"


def _dead_letters(
    channel: BlockingChannel, exchanges: tuple[str, str], expected: set[str], **arguments: Any
) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Publish to a queue with the dead-letter ``arguments`` by key ``pub-key`` with
    ``HEADERS``, reject it, and return the (routing key, headers) of what the queue bound to
    the dead-letter exchange by each key got, once the queues of the ``expected`` keys have
    something (RabbitMQ dead-letters asynchronously)."""
    into, dlx = exchanges
    source = channel.queue_declare(
        "", exclusive=True, arguments={"x-dead-letter-exchange": dlx, **arguments}
    ).method.queue
    channel.queue_bind(source, into, "pub-key")
    by_key: dict[str, str] = {}
    for key in ("pub-key", "cc-key", "bcc-key", "dl-key"):
        by_key[key] = channel.queue_declare("", exclusive=True).method.queue
        channel.queue_bind(by_key[key], dlx, key)
    channel.basic_publish(into, "pub-key", b"m", pika.BasicProperties(headers=dict(HEADERS)))
    method, _, _ = channel.basic_get(source)
    channel.basic_reject(method.delivery_tag, requeue=False)

    def arrived() -> bool:
        counts = (
            channel.queue_declare(by_key[key], passive=True).method.message_count
            for key in expected
        )
        return all(counts)

    assert holds_within(arrived)
    received: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, queue in by_key.items():
        received[key] = []
        for _ in range(3):
            got, properties, _ = channel.basic_get(queue, auto_ack=True)
            if got is None:
                break
            received[key].append((got.routing_key, properties.headers))
    return received


def _without_death(headers: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in headers.items() if not k.startswith("x-")}


def test_without_a_dead_letter_key_every_published_key_routes_bcc_included(
    channel: BlockingChannel, exchanges: tuple[str, str]
) -> None:
    routed = {"pub-key", "cc-key", "bcc-key"}
    received = _dead_letters(channel, exchanges, routed)
    assert {key for key, got in received.items() if got} == routed
    for key in routed:
        [(routing_key, headers)] = received[key]
        assert routing_key == "pub-key"
        assert _without_death(headers) == {"CC": ["cc-key"], "n": 1}
        assert headers["x-death"][0]["routing-keys"] == ["pub-key", "cc-key"]


def test_a_dead_letter_key_routes_alone_and_keeps_the_cc_header(
    channel: BlockingChannel, exchanges: tuple[str, str]
) -> None:
    arguments = {"x-dead-letter-routing-key": "dl-key"}
    received = _dead_letters(channel, exchanges, {"dl-key"}, **arguments)
    assert {key for key, got in received.items() if got} == {"dl-key"}
    [(routing_key, headers)] = received["dl-key"]
    assert routing_key == "dl-key"
    assert _without_death(headers) == {"CC": ["cc-key"], "n": 1}
    assert headers["x-death"][0]["routing-keys"] == ["pub-key", "cc-key"]
