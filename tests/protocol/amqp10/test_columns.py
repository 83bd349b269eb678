"""The column decoder gives every record what ``to_amqp091`` gives it (which the RabbitMQ
tests check against the node), whether the record is like the one before it (its cached
sections), differs in one section, or is of a shape decoded in full; a row is its body, its
offset and its kind of message (the ``x-stream-offset`` header is the source's to add)."""

from __future__ import annotations

from amqp_protocol.amqp10 import (
    Message,
    StoredColumns,
    encode_message,
    from_amqp091,
    to_amqp091,
)
from amqp_protocol.amqp10.amqp091 import PROPERTY_FIELDS, STREAM_OFFSET_HEADER
from amqp_protocol.amqp10.types import Symbol
from tests.protocol.amqp10.rows import rows_of
from tests.protocol.amqp10.test_rabbitmq_mapping import PUBLISHES_10

STREAM = "stream"


def records_of_every_shape() -> list[memoryview]:
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
    records = records_of_every_shape()
    columns = StoredColumns(STREAM)
    columns.add(records[:4], 100)
    columns.add(records[4:], 104)
    for i, (record, row) in enumerate(zip(records, rows_of(columns), strict=True)):
        delivery = to_amqp091(record, STREAM, 100 + i)
        assert row["body"] == delivery.body
        assert row["offset"] == 100 + i
        assert (row["exchange"], row["routing_key"]) == (delivery.exchange, delivery.routing_key)
        expected = dict(delivery.properties)
        headers = {k: v for k, v in expected.pop("headers").items() if k != STREAM_OFFSET_HEADER}
        properties = {name: row[name] for name in PROPERTY_FIELDS if row[name] is not None}
        assert properties.pop("headers", {}) == headers
        assert list(row["headers"] or ()) == list(headers)  # same order
        assert properties == expected


def test_records_alike_share_one_kind_and_records_that_differ_get_their_own() -> None:
    records = records_of_every_shape()
    columns = StoredColumns(STREAM)
    columns.add(records, 0)
    assert columns.kinds[0] == columns.kinds[1] == columns.kinds[-2]
    assert len(set(columns.kinds[2:5])) == 3  # own message ids
    assert len(columns.fields) == len(set(columns.kinds))


def test_runs_of_consecutive_offsets_are_kept_apart() -> None:
    records = records_of_every_shape()
    columns = StoredColumns(STREAM)
    columns.add(records[:2], 7)
    columns.add(records[2:3], 20)
    columns.add([], 30)
    assert columns.runs == [(7, 2), (20, 1)]
    assert len(columns) == 3


def test_no_records_give_no_rows() -> None:
    columns = StoredColumns(STREAM)
    columns.add([], 0)
    assert (len(columns), columns.runs, columns.fields) == (0, [], [])
