"""Arrow record batches -> messages: values, properties, addresses and ids, per column."""

from __future__ import annotations

import datetime
from typing import NamedTuple

import pyarrow as pa
import pytest

from amqp_protocol import Properties
from amqp_spark.sink.columns import ColumnPlan
from amqp_spark.sink.messages import MessageIds, RowError, to_messages
from amqp_spark.sink.settings import SinkSettings

IDS = MessageIds("query-1", 7, 3)


class Message(NamedTuple):
    exchange: str
    routing_key: str
    body: bytes
    properties: Properties


def convert(columns: dict[str, pa.Array], first_row: int = 0, **options: str) -> list[Message]:
    batch = pa.record_batch(list(columns.values()), names=list(columns))
    settings = SinkSettings.parse({"uri": "amqp://127.0.0.1", **options})
    plan = ColumnPlan(
        index={name: i for i, name in enumerate(columns)},
        body_is_string=pa.types.is_string(batch.column(0).type),
    )
    if settings.exchange is not None:
        plan.index.pop("exchange", None)
    if settings.routing_key is not None:
        plan.index.pop("routing_key", None)
    runs = to_messages(batch, plan, settings, IDS, first_row)
    return [Message(run.exchange, *message) for run in runs for message in run.messages]


def test_binary_body_is_sent_as_is_and_string_body_as_utf8() -> None:
    binary = convert({"body": pa.array([b"\x00\xff", b""], pa.binary())})
    text = convert({"body": pa.array(["héllo", ""], pa.string())})
    assert [m.body for m in binary] == [b"\x00\xff", b""]
    assert [m.body for m in text] == ["héllo".encode(), b""]


def test_null_body_names_the_row() -> None:
    with pytest.raises(RowError, match="'body' is null at row 11"):
        convert({"body": pa.array([b"a", None], pa.binary())}, first_row=10)


def test_without_address_columns_rows_go_to_the_default_exchange_with_empty_key() -> None:
    (m,) = convert({"body": pa.array([b"a"])})
    assert (m.exchange, m.routing_key) == ("", "")


def test_exchange_and_routing_key_per_row_with_null_as_empty() -> None:
    messages = convert(
        {
            "body": pa.array([b"a", b"b", b"c"]),
            "exchange": pa.array(["x", None, "y"]),
            "routing_key": pa.array(["k1", "k2", None]),
        }
    )
    assert [(m.exchange, m.routing_key) for m in messages] == [
        ("x", "k1"),
        ("", "k2"),
        ("y", ""),
    ]


def test_fixed_exchange_and_key_options() -> None:
    messages = convert({"body": pa.array([b"a", b"b"])}, exchange="out", routingKey="k")
    assert {(m.exchange, m.routing_key) for m in messages} == {("out", "k")}


def test_every_property_column_maps_to_the_property_of_its_name() -> None:
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 999_000, tzinfo=datetime.timezone.utc)
    strings = ("content_type", "content_encoding", "correlation_id", "reply_to", "expiration")
    more = ("message_id", "type", "user_id", "app_id")
    columns = {"body": pa.array([b"a"])}
    columns.update({name: pa.array([f"{name}-v"]) for name in strings + more})
    columns["delivery_mode"] = pa.array([1], pa.int32())
    columns["priority"] = pa.array([9], pa.int8())
    columns["timestamp"] = pa.array([when], pa.timestamp("us", tz="UTC"))
    columns["headers"] = pa.array([[("a", "1"), ("b", "x")]], pa.map_(pa.string(), pa.string()))
    (m,) = convert(columns)
    expected: dict[str, object] = {name: f"{name}-v" for name in strings + more}
    expected.update(
        delivery_mode=1,
        priority=9,
        timestamp=int(when.timestamp()),  # AMQP timestamps are whole seconds
        headers={"a": "1", "b": "x"},
    )
    assert m.properties.present() == expected


def test_nulls_leave_properties_unset_and_delivery_mode_defaults() -> None:
    (m,) = convert(
        {
            "body": pa.array([b"a"]),
            "content_type": pa.array([None], pa.string()),
            "delivery_mode": pa.array([None], pa.int32()),
            "headers": pa.array([None], pa.map_(pa.string(), pa.string())),
        },
        deliveryMode="transient",
    )
    assert m.properties.present() == {"delivery_mode": 1, "message_id": "query-1:7:3:0"}


def test_messages_are_persistent_by_default() -> None:
    (m,) = convert({"body": pa.array([b"a"])})
    assert m.properties.fields()["delivery_mode"] == 2


def test_deterministic_ids_count_rows_of_the_partition() -> None:
    messages = convert({"body": pa.array([b"a", b"b"])}, first_row=5)
    assert [m.properties.fields()["message_id"] for m in messages] == [
        "query-1:7:3:5",
        "query-1:7:3:6",
    ]


def test_given_message_ids_are_kept_and_nulls_get_a_deterministic_id() -> None:
    messages = convert({"body": pa.array([b"a", b"b"]), "message_id": pa.array(["m-1", None])})
    assert [m.properties.fields()["message_id"] for m in messages] == ["m-1", "query-1:7:3:1"]


def test_out_of_range_priority_names_the_row_and_range() -> None:
    with pytest.raises(RowError, match="'priority' at row 1 is 300, expected 0 to 255"):
        convert({"body": pa.array([b"a", b"b"]), "priority": pa.array([1, 300], pa.int32())})


def test_short_string_over_255_bytes_names_the_column_and_row() -> None:
    with pytest.raises(RowError, match="'routing_key' at row 2 is longer than 255 bytes"):
        convert(
            {"body": pa.array([b"a", b"b", b"c"]), "routing_key": pa.array(["k", None, "é" * 128])}
        )


def test_consecutive_rows_for_one_exchange_are_grouped_in_row_order() -> None:
    batch = pa.record_batch(
        [pa.array([b"1", b"2", b"3", b"4"]), pa.array(["x", "x", "y", "x"])],
        names=["body", "exchange"],
    )
    settings = SinkSettings.parse({"uri": "amqp://127.0.0.1"})
    plan = ColumnPlan(index={"body": 0, "exchange": 1}, body_is_string=False)
    runs = to_messages(batch, plan, settings, IDS, 0)
    assert [(run.exchange, [body for _, body, _ in run.messages]) for run in runs] == [
        ("x", [b"1", b"2"]),
        ("y", [b"3"]),
        ("x", [b"4"]),
    ]


def test_filter_value_column_sets_the_stream_filter_header_beside_the_others() -> None:
    messages = convert(
        {
            "body": pa.array([b"a", b"b", b"c"]),
            "headers": pa.array([[("k", "v")], None, None], pa.map_(pa.string(), pa.string())),
            "filter_value": pa.array(["eu", "us", None]),
        }
    )
    assert [m.properties.fields()["headers"] for m in messages] == [
        {"k": "v", "x-stream-filter-value": "eu"},
        {"x-stream-filter-value": "us"},
        None,
    ]


def test_filter_value_option_tags_every_row() -> None:
    messages = convert({"body": pa.array([b"a", b"b"])}, filterValue="all")
    assert [m.properties.fields()["headers"] for m in messages] == [
        {"x-stream-filter-value": "all"}
    ] * 2
