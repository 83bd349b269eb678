"""Stream filtering over AMQP 0-9-1 (RabbitMQ 3.13+): the same tests against the bundled
broker and RabbitMQ 4.0.

What RabbitMQ 4.0.5 does was measured with these tests (and pika by hand): a chunk is
delivered whole when its filter may match, so the tests publish each message as a chunk of
its own (a confirm waited for each) where they assert which messages arrive, and otherwise
assert only what cannot depend on chunking: every matching message arrives, and a message
in a chunk of its own that does not match never does.
"""

from __future__ import annotations

import time
from typing import Any

import pika
import pytest
from pika.exceptions import ConnectionClosedByBroker

from .test_stream_semantics import Consumer, declare_error, name, stream

__all__ = ["stream"]

FILTER_VALUE = "x-stream-filter-value"


def publish_tagged(
    connection: pika.BlockingConnection, queue: str, messages: list[tuple[str, Any]]
) -> None:
    """Publish (body, filter value or None) each as a chunk of its own (confirm awaited)."""
    ch = connection.channel()
    ch.confirm_delivery()
    for body, value in messages:
        headers = None if value is None else {FILTER_VALUE: value}
        ch.basic_publish("", queue, body.encode(), pika.BasicProperties(headers=headers))
    ch.close()


def bodies(consumer: Consumer) -> list[str]:
    return [body.decode() for _, _, body in consumer.received]


MESSAGES = [("a1", "a"), ("b1", "b"), ("n1", None), ("a2", "a"), ("c1", "c")]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"x-stream-filter": "a"}, ["a1", "a2"]),
        ({"x-stream-filter": ["a", "c"]}, ["a1", "a2", "c1"]),
        ({"x-stream-filter": "a", "x-stream-match-unfiltered": True}, ["a1", "n1", "a2"]),
        ({"x-stream-filter": "zz"}, []),
        ({"x-stream-filter": [""]}, ["n1"]),  # unfiltered messages count as ""
        ({"x-stream-match-unfiltered": True}, ["a1", "b1", "n1", "a2", "c1"]),  # no filter
        ({"x-stream-filter": "a", "x-stream-match-unfiltered": 1}, ["a1", "a2"]),  # true only
        ({"x-stream-filter": ["a", 1]}, ["a1", "a2"]),  # non-strings in the array ignored
        ({"x-stream-filter": 5}, ["a1", "b1", "n1", "a2", "c1"]),  # not a filter: ignored
    ],
)
def test_a_filtered_consumer_gets_the_chunks_its_filter_matches(
    connection: pika.BlockingConnection,
    stream: str,
    arguments: dict[str, Any],
    expected: list[str],
) -> None:
    publish_tagged(connection, stream, MESSAGES)
    consumer = filtered(connection, stream, arguments)
    consumer.wait(len(expected))
    consumer.settle(0.5)
    assert bodies(consumer) == expected


def filtered(
    connection: pika.BlockingConnection, queue: str, arguments: dict[str, Any]
) -> Consumer:
    """A consumer from ``first`` with filter arguments."""
    return Consumer(connection, queue, offset="first", prefetch=1000, arguments=arguments)


def test_a_matching_chunk_is_delivered_whole_so_the_consumer_checks_each_message(
    connection: pika.BlockingConnection, stream: str
) -> None:
    """Twenty publishes not awaited one by one land in few chunks; whatever the chunking,
    every match arrives, and so do the non-matching messages sharing its chunk."""
    ch = connection.channel()
    ch.confirm_delivery()
    for i in range(20):
        value = "x" if i == 7 else "y"
        ch.basic_publish(
            "", stream, f"m{i}".encode(), pika.BasicProperties(headers={FILTER_VALUE: value})
        )
    ch.close()
    publish_tagged(connection, stream, [("alone", "y")])
    consumer = filtered(connection, stream, {"x-stream-filter": "x"})
    consumer.wait(1)
    consumer.settle(0.5)
    got = bodies(consumer)
    assert "m7" in got
    assert "alone" not in got  # a chunk of its own that cannot match
    matching = [h for h in consumer.headers if h.get(FILTER_VALUE) == "x"]
    assert len(matching) == 1


def test_a_filtered_consumer_follows_new_chunks(
    connection: pika.BlockingConnection, stream: str
) -> None:
    consumer = filtered(connection, stream, {"x-stream-filter": "a"})
    consumer.settle(0.2)
    publish_tagged(connection, stream, [("b1", "b"), ("a1", "a"), ("b2", "b"), ("a2", "a")])
    consumer.wait(2)
    consumer.settle(0.3)
    assert bodies(consumer) == ["a1", "a2"]
    assert consumer.offsets == [1, 3]


@pytest.mark.parametrize("value", [5, True, ["a"]])
def test_a_filter_value_that_is_not_a_string_closes_the_connection_with_541(
    broker_url: str, stream: str, value: Any
) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    ch = conn.channel()
    ch.confirm_delivery()
    with pytest.raises(ConnectionClosedByBroker) as closed:
        ch.basic_publish("", stream, b"m", pika.BasicProperties(headers={FILTER_VALUE: value}))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.05)
    assert (closed.value.reply_code, closed.value.reply_text) == (541, "INTERNAL_ERROR")


@pytest.mark.parametrize("filter_argument", [[], [1, 2]])
def test_a_filter_array_without_a_string_closes_the_connection_with_541(
    broker_url: str, stream: str, filter_argument: list[Any]
) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=10)
    args = {"x-stream-offset": "first", "x-stream-filter": filter_argument}
    with pytest.raises(ConnectionClosedByBroker) as closed:
        ch.basic_consume(stream, lambda *a: None, arguments=args)
    assert (closed.value.reply_code, closed.value.reply_text) == (541, "INTERNAL_ERROR")


@pytest.mark.parametrize("size", [15, 256, 0, "32"])
def test_a_filter_size_outside_16_to_255_bytes_is_refused(broker_url: str, size: Any) -> None:
    arguments = {"x-queue-type": "stream", "x-stream-filter-size-bytes": size}
    assert declare_error(broker_url, queue=name(), durable=True, arguments=arguments) == (
        406,
        "PRECONDITION_FAILED - Invalid value for  x-stream-filter-size-bytes",
    )


@pytest.mark.parametrize("size", [16, 255])
def test_a_stream_with_a_larger_filter_filters_the_same(
    connection: pika.BlockingConnection, size: int
) -> None:
    queue = name()
    ch = connection.channel()
    ch.queue_declare(
        queue,
        durable=True,
        arguments={"x-queue-type": "stream", "x-stream-filter-size-bytes": size},
    )
    try:
        publish_tagged(connection, queue, MESSAGES)
        consumer = filtered(connection, queue, {"x-stream-filter": "b"})
        consumer.wait(1)
        consumer.settle(0.3)
        assert bodies(consumer) == ["b1"]
    finally:
        ch.queue_delete(queue)
