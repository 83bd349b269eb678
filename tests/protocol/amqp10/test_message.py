"""The AMQP 1.0 message format: every section round-trips; the 0-9-1 conversions round-trip
(a row the sink writes is read back by a 0-9-1 consumer with the same properties)."""

from __future__ import annotations

import uuid

import pytest

from amqp_protocol.amqp10 import (
    Header,
    Message,
    Properties,
    decode_message,
    encode_message,
    from_amqp091,
    to_amqp091,
)
from amqp_protocol.amqp10.types import AMQP10DecodeError, Symbol, Timestamp
from tests.protocol.amqp10.test_rabbitmq_mapping import SINK_ROW

EVERY_SECTION = Message(
    body=[b"one", b"two"],
    header=Header(durable=True, priority=9, ttl=1000, first_acquirer=False, delivery_count=2),
    delivery_annotations={Symbol("x-d"): 1},
    message_annotations={Symbol("x-m"): "v"},
    properties=Properties(
        message_id=uuid.UUID(int=5),
        user_id=b"u",
        to="t",
        subject="s",
        reply_to="r",
        correlation_id=7,
        content_type="text/plain",
        content_encoding="gzip",
        absolute_expiry_time=Timestamp(2),
        creation_time=Timestamp(3),
        group_id="g",
        group_sequence=4,
        reply_to_group_id="rg",
    ),
    application_properties={"k": "v"},
    footer={Symbol("x-f"): b"\x00"},
)


@pytest.mark.parametrize(
    "message",
    [
        EVERY_SECTION,
        Message(body=[b""]),
        Message(body={"a": [1]}, body_kind="amqp-value"),
        Message(body=[[1], ["x"]], body_kind="amqp-sequence"),
    ],
)
def test_a_message_round_trips_through_its_encoding(message: Message) -> None:
    assert decode_message(encode_message(message)) == message


def test_data_sections_concatenate_into_the_body() -> None:
    assert decode_message(encode_message(EVERY_SECTION)).data == b"onetwo"


def test_a_body_mixing_section_kinds_is_refused() -> None:
    mixed = encode_message(Message(body=[b"x"])) + encode_message(
        Message(body=1, body_kind="amqp-value")
    )
    with pytest.raises(AMQP10DecodeError, match="mixes sections"):
        decode_message(mixed)


def test_a_row_written_as_amqp10_reads_back_over_091_with_its_properties() -> None:
    """In process; tests/protocol/amqp10/test_rabbitmq_mapping.py checks it on RabbitMQ 4."""
    delivery = to_amqp091(from_amqp091(SINK_ROW, b"body"), "stream", offset=9)
    assert delivery.body == b"body"
    assert (delivery.exchange, delivery.routing_key) == ("", "stream")
    expected_headers = {**SINK_ROW["headers"], "x-stream-offset": 9}
    assert delivery.properties == {**SINK_ROW, "headers": expected_headers}


def test_a_decimal_header_has_no_stored_form() -> None:
    import decimal

    with pytest.raises(ValueError, match="decimal header value"):
        from_amqp091({"headers": {"d": decimal.Decimal("1.5")}}, b"")


def test_basic_properties_objects_convert_as_their_fields_do() -> None:
    from amqp_protocol import SPEC_0_9_1

    basic = SPEC_0_9_1.properties("basic")(
        content_type="text/plain", headers={"h": "v"}, delivery_mode=2, timestamp=5
    )
    assert from_amqp091(basic, b"b") == from_amqp091(basic.present(), b"b")
