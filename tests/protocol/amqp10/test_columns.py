"""The column decoder gives every record what ``to_amqp091`` gives it (which the RabbitMQ
tests check against the node), whether the record is like the one before it (its cached
sections), differs in one section, or is of a shape decoded in full."""

from __future__ import annotations

from amqp_protocol.amqp10 import Message, decode_columns, encode_message, from_amqp091, to_amqp091
from amqp_protocol.amqp10.amqp091 import PROPERTY_FIELDS
from amqp_protocol.amqp10.types import Symbol
from tests.protocol.amqp10.test_rabbitmq_mapping import PUBLISHES_10

STREAM = "stream"


def _records() -> list[memoryview]:
    alike = from_amqp091({"content_type": "text/plain", "headers": {"a": "1"}}, b"x", "", STREAM)
    own_ids = [
        from_amqp091({"message_id": f"m-{i}", "headers": {"z": i}}, b"y", "", STREAM)
        for i in range(3)
    ]
    others = [encode_message(m) for m in PUBLISHES_10]
    footer = encode_message(Message(body=[b"f"], footer={Symbol("x-f"): 1}))
    chunk = [alike, alike, *own_ids, *others, footer, alike, b""]
    return [memoryview(record) for record in chunk]


def test_every_row_is_what_a_091_consumer_gets_for_its_record() -> None:
    records = _records()
    columns = decode_columns(records, STREAM, 100)
    for i, record in enumerate(records):
        delivery = to_amqp091(record, STREAM, 100 + i)
        row = {name: values[i] for name, values in columns.items()}
        assert row["body"] == delivery.body
        assert row["offset"] == 100 + i
        assert (row["exchange"], row["routing_key"]) == (delivery.exchange, delivery.routing_key)
        properties = {name: row[name] for name in PROPERTY_FIELDS if row[name] is not None}
        assert properties == delivery.properties
        assert list(row["headers"]) == list(delivery.properties["headers"])  # same order


def test_no_records_give_empty_columns() -> None:
    columns = decode_columns([], STREAM, 0)
    assert set(columns) == {"body", "offset", *PROPERTY_FIELDS, "exchange", "routing_key"}
    assert all(values == [] for values in columns.values())
