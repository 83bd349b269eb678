"""Deliveries convert to record batches in exactly the schema Spark expects, column by
column, with headers of every AMQP field type rendered as strings."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import StoredColumns, to_amqp091
from amqp_protocol.events import DeliveryColumns, DeliveryKind
from amqp_spark.client import Delivery
from amqp_spark.schema import COLUMN_NAMES, arrow_schema
from amqp_spark.source.arrow import (
    classic_rows,
    deserialize,
    joined_record_batch,
    kind_columns,
    render_header,
    serialize,
    stored_to_record_batch,
    to_record_batch,
)
from tests.protocol.amqp10.test_columns import records_of_every_shape

Props = SPEC_0_9_1.properties("basic")


def delivery(tag: int, **props: object) -> Delivery:
    return Delivery("ctag", tag, tag % 2 == 0, "ex", f"rk{tag}", Props(**props), b"b%d" % tag)


def test_batch_schema_is_exactly_the_arrow_schema_of_the_source() -> None:
    batch = to_record_batch([delivery(1)], "q", with_offsets=False)
    assert batch.schema == arrow_schema()
    assert batch.schema.names == list(COLUMN_NAMES)


def test_every_column_comes_from_the_delivery() -> None:
    d = delivery(
        2,
        content_type="text/plain",
        content_encoding="utf-8",
        delivery_mode=2,
        priority=5,
        correlation_id="c",
        reply_to="r",
        expiration="60000",
        message_id="m",
        timestamp=1_700_000_000,
        type="t",
        user_id="guest",
        app_id="a",
        headers={"k": "v"},
    )
    (row,) = to_record_batch([d], "orders", with_offsets=False).to_pylist()
    assert row == {
        "body": b"b2",
        "routing_key": "rk2",
        "exchange": "ex",
        "queue": "orders",
        "delivery_tag": 2,
        "redelivered": True,
        "offset": None,
        "timestamp": datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc),
        "content_type": "text/plain",
        "content_encoding": "utf-8",
        "delivery_mode": 2,
        "priority": 5,
        "correlation_id": "c",
        "reply_to": "r",
        "expiration": "60000",
        "message_id": "m",
        "type": "t",
        "user_id": "guest",
        "app_id": "a",
        "headers": [("k", "v")],
    }


def test_a_property_some_deliveries_lack_is_null_in_their_rows_only() -> None:
    deliveries = [
        delivery(1),
        delivery(2, content_type="text/plain", timestamp=1_700_000_000, headers={"k": 1}),
        delivery(3, priority=0),
    ]
    rows = to_record_batch(deliveries, "q", with_offsets=False).to_pylist()
    assert [r["content_type"] for r in rows] == [None, "text/plain", None]
    assert [r["priority"] for r in rows] == [None, None, 0]
    assert [r["headers"] for r in rows] == [None, [("k", "1")], None]
    moment = datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc)
    assert [r["timestamp"] for r in rows] == [None, moment, None]
    assert all(r[name] is None for r in rows for name in ("message_id", "app_id", "expiration"))


def test_rows_without_any_property_have_every_property_null() -> None:
    batch = to_record_batch([delivery(1), delivery(2)], "q", with_offsets=False)
    assert batch.schema == arrow_schema()
    for name in ("timestamp", "headers", "content_type", "delivery_mode", "priority", "type"):
        assert batch.column(name).null_count == 2, name


def test_stream_offsets_come_from_the_x_stream_offset_header() -> None:
    batch = to_record_batch(
        [delivery(1, headers={"x-stream-offset": 41}), delivery(2, headers={})],
        "s",
        with_offsets=True,
    )
    assert batch.column("offset").to_pylist() == [41, None]


def test_headers_of_every_field_type_render_as_strings() -> None:
    headers = {
        "str": "s",
        "int": -7,
        "bool": True,
        "float": 1.5,
        "decimal": decimal.Decimal("3.14"),
        "bytes": b"raw",
        "binary": b"\xff\x00",
        "time": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "table": {"a": [1, b"x"]},
        "array": [True, None],
        "void": None,
    }
    (row,) = to_record_batch([delivery(1, headers=headers)], "q", False).to_pylist()
    assert dict(row["headers"]) == {
        "str": "s",
        "int": "-7",
        "bool": "true",
        "float": "1.5",
        "decimal": "3.14",
        "bytes": "raw",
        "binary": "base64:/wA=",
        "time": "2024-01-02T03:04:05+00:00",
        "table": '{"a": [1, "x"]}',
        "array": "[true, null]",
        "void": None,
    }


def test_naive_timestamps_in_headers_are_taken_as_utc() -> None:
    assert render_header(datetime.datetime(2024, 1, 1)) == "2024-01-01T00:00:00+00:00"


def test_ipc_bytes_carry_the_batch_unchanged() -> None:
    batch = to_record_batch([delivery(i) for i in range(1, 4)], "q", False)
    (back,) = deserialize(serialize(batch))
    assert isinstance(back, pa.RecordBatch)
    assert back.equals(batch)


def test_stream_protocol_rows_equal_the_rows_of_the_deliveries_a_091_consumer_gets() -> None:
    """Every record shape of the column decoder's tests (alike, own ids and headers, AMQP
    1.0 publishes, a footer, an empty record), in two runs of offsets: the rows built from
    the kinds by index, with ``x-stream-offset`` put in each row's headers, are the rows of
    the 0-9-1 deliveries, but for the delivery tag and redelivered."""
    records = records_of_every_shape()
    stored = StoredColumns("s")
    stored.add(records[:5], 100)
    stored.add(records[5:], 900)
    offsets = [*range(100, 105), *range(900, 900 + len(records) - 5)]
    deliveries = [
        Delivery("", 1, False, d.exchange, d.routing_key, Props(**d.properties), d.body)
        for d in (to_amqp091(r, "s", o) for r, o in zip(records, offsets, strict=True))
    ]
    ours = stored_to_record_batch(stored)
    assert ours.schema == arrow_schema()
    expected = to_record_batch(deliveries, "s", with_offsets=True).to_pylist()
    for row in expected:
        row.update(delivery_tag=None, redelivered=False)
    assert ours.to_pylist() == expected


def test_no_stored_records_give_an_empty_batch_of_the_schema() -> None:
    batch = stored_to_record_batch(StoredColumns("s"))
    assert (batch.num_rows, batch.schema) == (0, arrow_schema())


def _as_columns(deliveries: list[Delivery]) -> DeliveryColumns:
    """``deliveries`` as the client hands them to a columnar channel: each its own kind."""
    kinds = [
        DeliveryKind(d.consumer_tag, d.redelivered, d.exchange, d.routing_key, d.properties)
        for d in deliveries
    ]
    return DeliveryColumns(
        [d.delivery_tag for d in deliveries],
        list(range(len(deliveries))),
        [d.body for d in deliveries],
        kinds,
        [None] * len(deliveries),
    )


def test_held_columns_joined_on_the_executor_equal_the_rows_of_the_deliveries() -> None:
    deliveries = [
        delivery(1),
        delivery(2, message_id="m", timestamp=1_700_000_000, headers={"n": 1, "s": b"x"}),
        delivery(3, content_type="text/plain", priority=3, delivery_mode=2),
    ]
    columns = _as_columns(deliveries)
    rows, kinds = deserialize(serialize(classic_rows(columns))), kind_columns(columns.distinct)
    joined = joined_record_batch(rows[0], kinds, "orders")
    assert joined.schema == arrow_schema()
    assert joined.to_pylist() == to_record_batch(deliveries, "orders", False).to_pylist()


def test_rows_of_one_kind_take_its_columns_by_index() -> None:
    deliveries = [delivery(1, app_id="a"), delivery(2, app_id="b")]
    columns = _as_columns(deliveries)
    columns.kinds = [0, 1, 1, 0]
    columns.tags, columns.bodies = [1, 2, 3, 4], [b"1", b"2", b"3", b"4"]
    batch = joined_record_batch(classic_rows(columns), kind_columns(columns.distinct), "q")
    assert batch.column("app_id").to_pylist() == ["a", "b", "b", "a"]
    assert batch.column("routing_key").to_pylist() == ["rk1", "rk2", "rk2", "rk1"]
    assert batch.column("delivery_tag").to_pylist() == [1, 2, 3, 4]
    assert batch.column("content_type").null_count == 4
