"""The 0-9-1 <-> AMQP 1.0 mapping of ``amqp_protocol.amqp10`` against RabbitMQ 4's own: a
0-9-1 publish to a stream is stored as ``from_amqp091`` says, and a 0-9-1 consumer of AMQP 1.0
messages published over the stream protocol gets what ``to_amqp091`` and the column decoder
say. Fails when our mapping differs from RabbitMQ's."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from amqp_protocol.amqp10 import (
    Header,
    Message,
    Properties,
    StoredColumns,
    decode_message,
    encode_message,
    from_amqp091,
    from_amqp091_message,
    to_amqp091,
)
from amqp_protocol.amqp10.types import Float, Long, Symbol, Timestamp, UByte, UInt, ULong
from amqp_spark.client import connect
from tests.protocol.amqp10.rows import rows_of
from tests.protocol.amqp10.stream_client import delete, publish, read_stored

pytestmark = pytest.mark.rabbitmq

#: Every basic property, and headers of every field type RabbitMQ 4 stores in a stream.
ALL_PROPERTIES: dict[str, Any] = {
    "content_type": "text/plain",
    "content_encoding": "gzip",
    "headers": {
        "str": "v",
        "int": 5,
        "big": 2**40,
        "neg": -7,
        "bool": True,
        "float": 1.25,
        "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "bytes": b"\xff\x00",
        "table": {"a": 1, "b": "x"},
        "arr": [1, "a", True],
        "void": None,
        "x-custom": "xv",
        "x-int": 3,
        "x-table": {"k": "v"},
        "CC": ["a", "b"],
    },
    "delivery_mode": 2,
    "priority": 4,
    "correlation_id": "corr",
    "reply_to": "rq",
    "expiration": "60000",
    "message_id": "mid",
    "timestamp": 1700000000,
    "type": "ty",
    "user_id": "guest",
    "app_id": "app",
}
PUBLISHES_091: list[dict[str, Any]] = [
    ALL_PROPERTIES,
    {},
    {
        "delivery_mode": 1,
        "message_id": "urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        "correlation_id": "x" * 10,
    },
    {
        "expiration": "100",
        "priority": 0,
        "app_id": "a" * 255,
        "headers": {"t": False, "zero": 0, "x-neg-big": -(2**40), "long": "é" * 200},
    },
]

_FULL_10 = Message(
    body=[b"d1"],
    header=Header(durable=True, priority=7, ttl=5000),
    message_annotations={"x-basic-type": "t", "x-foo": "bar", "x-opt-n": UInt(3)},
    properties=Properties(
        message_id=ULong(42),
        user_id=b"guest",
        to="/q/s",
        subject="subj",
        reply_to="r",
        correlation_id=uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
        content_type="application/json",
        content_encoding="br",
        absolute_expiry_time=Timestamp(1),
        creation_time=Timestamp(1700000000123),
        group_id="g",
        group_sequence=5,
        reply_to_group_id="rg",
    ),
    application_properties={
        "s": "v",
        "i": 5,
        "l": Long(2**40),
        "ub": UByte(200),
        "f": Float(1.5),
        "d": 2.5,
        "b": True,
        "bin": b"\xff",
        "text-bin": b"abc",
        "ts": Timestamp(1700000000999),
        "sym": Symbol("sy"),
        "n": None,
    },
)
#: AMQP 1.0 messages as a stream client publishes them.
PUBLISHES_10: list[Message] = [
    _FULL_10,
    _FULL_10._replace(header=None),
    _FULL_10._replace(header=Header(durable=False), message_annotations=None),
    Message(
        body={"a": [1, 2]},
        body_kind="amqp-value",
        properties=Properties(message_id=b"\x01\x02", correlation_id="c" * 300),
    ),
    Message(body=[[1, "x"], [2]], body_kind="amqp-sequence", header=Header(durable=False)),
    Message(body="just a string", body_kind="amqp-value"),
    Message(body=[b"a", b"b"]),
    Message(body=[b"plain"]),
    Message(body=[1, "x"], body_kind="amqp-value", footer={Symbol("x-f"): "v"}),
    Message(
        body=[b"basic"],
        header=Header(durable=True),
        message_annotations={
            "x-basic-priority": UByte(3),
            "x-basic-expiration": "0500",
            "x-basic-delivery-mode": UByte(1),
        },
    ),
    Message(
        body=[b"cc"],
        message_annotations={"x-cc": ["r1", "r2"], "x-same": "annotation"},
        application_properties={"x-same": "property", "k" * 300: "too long a key"},
    ),
]


@pytest.fixture
def stream(rabbitmq_url: str, rabbitmq_stream_url: str) -> Iterator[str]:
    name = f"amqp10-{uuid.uuid4().hex[:8]}"
    with connect(rabbitmq_url) as conn:
        conn.channel().queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    yield name
    delete(rabbitmq_stream_url, name)


def _publish_091(url: str, stream: str, messages: list[tuple[bytes, dict[str, Any]]]) -> None:
    """Publish ``(body, properties)`` messages to ``stream`` over 0-9-1, confirmed."""
    with connect(url) as conn:
        ch = conn.channel()
        ch.confirm_select()
        for body, properties in messages:
            ch.basic_publish("", stream, body, properties)
        ch.wait_for_confirms(timeout=30)


def test_a_091_publish_is_stored_byte_for_byte_as_from_amqp091_says(
    rabbitmq_url: str, rabbitmq_stream_url: str, stream: str
) -> None:
    _publish_091(
        rabbitmq_url, stream, [(f"body {i}".encode(), p) for i, p in enumerate(PUBLISHES_091)]
    )
    stored = read_stored(rabbitmq_stream_url, stream, len(PUBLISHES_091))
    for i, (properties, raw) in enumerate(zip(PUBLISHES_091, stored, strict=True)):
        ours = from_amqp091_message(properties, f"body {i}".encode(), "", stream)
        assert decode_message(raw) == ours
        assert raw == from_amqp091(properties, f"body {i}".encode(), "", stream)


def _consume_091(url: str, stream: str, count: int) -> list[Any]:
    with connect(url) as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=count)
        ch.basic_consume(stream, arguments={"x-stream-offset": "first"})
        deliveries = [ch.next_delivery(timeout=30) for _ in range(count)]
    assert None not in deliveries, "RabbitMQ delivered fewer messages than were published"
    return deliveries


def test_a_091_consumer_gets_what_to_amqp091_says(
    rabbitmq_url: str, rabbitmq_stream_url: str, stream: str
) -> None:
    encoded = [encode_message(m) for m in PUBLISHES_10]
    publish(rabbitmq_stream_url, stream, encoded)
    deliveries = _consume_091(rabbitmq_url, stream, len(encoded))
    offsets = [d.properties.headers["x-stream-offset"] for d in deliveries]
    for data, offset, delivery in zip(encoded, offsets, deliveries, strict=True):
        ours = to_amqp091(data, stream, offset)
        assert ours.properties == delivery.properties.present()
        assert (ours.body, ours.exchange, ours.routing_key) == (
            delivery.body,
            delivery.exchange,
            delivery.routing_key,
        )


def test_the_column_decoder_gives_the_rows_a_091_consumer_reads(
    rabbitmq_url: str, rabbitmq_stream_url: str, stream: str
) -> None:
    _publish_091(rabbitmq_url, stream, [(b"over 0-9-1", ALL_PROPERTIES)])
    publish(rabbitmq_stream_url, stream, [encode_message(m) for m in PUBLISHES_10])
    count = 1 + len(PUBLISHES_10)
    stored = read_stored(rabbitmq_stream_url, stream, count)
    deliveries = _consume_091(rabbitmq_url, stream, count)
    first = deliveries[0].properties.headers["x-stream-offset"]
    columns = StoredColumns(stream)
    columns.add(stored, first)
    for delivery, row in zip(deliveries, rows_of(columns), strict=True):
        present = delivery.properties.present()
        assert row.pop("body") == delivery.body
        assert row.pop("exchange") == delivery.exchange
        assert row.pop("routing_key") == delivery.routing_key
        assert row.pop("offset") == present["headers"].pop("x-stream-offset")
        if not present["headers"]:
            del present["headers"]
        assert {k: v for k, v in row.items() if v is not None} == present


#: A row as the sink has it: every basic property, headers as strings (map<string,string>).
SINK_ROW: dict[str, Any] = {
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "headers": {"h": "v", "n": "1", "x-k": "x", "CC": "not an array"},
    "delivery_mode": 2,
    "priority": 3,
    "correlation_id": "c",
    "reply_to": "r",
    "expiration": "100000",
    "message_id": "m",
    "timestamp": 1700000000,
    "type": "t",
    "user_id": "guest",
    "app_id": "a",
}


def test_a_row_the_sink_writes_reads_back_over_091_with_its_properties(
    rabbitmq_url: str, rabbitmq_stream_url: str, stream: str
) -> None:
    publish(rabbitmq_stream_url, stream, [from_amqp091(SINK_ROW, b"row body")])
    (delivery,) = _consume_091(rabbitmq_url, stream, 1)
    assert delivery.body == b"row body"
    offset = delivery.properties.headers["x-stream-offset"]
    headers = {**SINK_ROW["headers"], "x-stream-offset": offset}
    assert delivery.properties.present() == {**SINK_ROW, "headers": headers}
