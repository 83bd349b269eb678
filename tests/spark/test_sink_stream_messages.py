"""Record batches -> the stream writer's messages: ids per row, streams per key, and the AMQP
1.0 message a 0-9-1 consumer of RabbitMQ 4 reads back with the row's properties."""

from __future__ import annotations

import pyarrow as pa

from amqp_protocol.amqp10 import Amqp091Delivery, from_amqp091, to_amqp091
from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.sink.columns import ColumnPlan
from amqp_spark.sink.messages import MessageIds, to_messages
from amqp_spark.sink.settings import SinkSettings
from amqp_spark.sink.stream_ids import PublishingIds
from amqp_spark.sink.stream_messages import StreamRun, to_stream_runs

PUBLISHING = PublishingIds("amqp-spark:q:3", 7)


def runs(
    columns: dict[str, pa.Array], route: str | dict[str, str], first_row: int = 0
) -> list[StreamRun]:
    batch = pa.record_batch(list(columns.values()), names=list(columns))
    settings = SinkSettings.parse({"uri": "amqp://127.0.0.1"})
    plan = ColumnPlan(index={name: i for i, name in enumerate(columns)}, body_is_string=False)
    ids = MessageIds("q", 7, 3)
    return to_stream_runs(batch, plan, settings, ids, PUBLISHING, first_row, route)


def delivered(message: PublishedMessage) -> Amqp091Delivery:
    """What a 0-9-1 consumer of RabbitMQ 4 gets for the stored message."""
    assert isinstance(message.message, bytes)
    return to_amqp091(message.message, "orders")


def test_rows_get_their_publishing_ids_and_message_ids_in_row_order() -> None:
    (run,) = runs({"body": pa.array([b"a", b"b", b"c"])}, "orders", first_row=10)
    assert run.stream == "orders" and not run.filtered
    assert [m.publishing_id for m in run.messages] == list(PUBLISHING.for_rows(10, 3))
    got = [delivered(m) for m in run.messages]
    assert [d.body for d in got] == [b"a", b"b", b"c"]
    assert [d.properties["message_id"] for d in got] == ["q:7:3:10", "q:7:3:11", "q:7:3:12"]
    assert {d.properties["delivery_mode"] for d in got} == {2}


def test_properties_and_headers_read_back_as_the_row_gave_them() -> None:
    (run,) = runs(
        {
            "body": pa.array([b"x"]),
            "content_type": pa.array(["text/plain"]),
            "correlation_id": pa.array(["c-1"]),
            "headers": pa.array([[("k", "v")]], pa.map_(pa.string(), pa.string())),
        },
        "orders",
    )
    properties = delivered(run.messages[0]).properties
    assert properties["content_type"] == "text/plain"
    assert properties["correlation_id"] == "c-1"
    assert properties["headers"]["k"] == "v"


def test_rows_go_to_the_stream_of_their_key_keeping_their_ids_and_order() -> None:
    keys = ["0", "1", "0", "1", "0"]
    by_stream = {
        run.stream: run
        for run in runs(
            {"body": pa.array([f"m{i}".encode() for i in range(5)]), "routing_key": pa.array(keys)},
            {"0": "s-0", "1": "s-1"},
        )
    }
    ids = list(PUBLISHING.for_rows(0, 5))
    assert [m.publishing_id for m in by_stream["s-0"].messages] == [ids[0], ids[2], ids[4]]
    assert [m.publishing_id for m in by_stream["s-1"].messages] == [ids[1], ids[3]]


def test_filter_values_are_handed_out_per_message_for_publish_version_2() -> None:
    (run,) = runs(
        {"body": pa.array([b"a", b"b"]), "filter_value": pa.array(["red", None])}, "orders"
    )
    assert run.filtered and [m.filter_value for m in run.messages] == ["red", None]


def test_rows_differing_only_in_their_ids_get_the_messages_from_amqp091_makes() -> None:
    """Rows whose properties all come from the options are encoded once per id length and
    put together from the cuts: the bytes are those of each row encoded on its own, across
    id lengths (row 9 to 10 to 100), bodies of every data-section size and a filter value
    that holds a row's id (its rows are encoded in full)."""
    bodies = [b"", b"a", bytes(255), bytes(256), bytes(70_000)]
    batch = pa.record_batch([pa.array(bodies * 20)], names=["body"])
    plan = ColumnPlan(index={"body": 0}, body_is_string=False)
    ids = MessageIds("q", 7, 3)
    for options in ({}, {"filterValue": "red"}, {"filterValue": "q:7:3:8"}):
        settings = SinkSettings.parse({"uri": "amqp://127.0.0.1", "stream": "s", **options})
        (run,) = to_stream_runs(batch, plan, settings, ids, PUBLISHING, 8, "s")
        (rows,) = to_messages(batch, plan, settings, ids, 8)
        expected = [from_amqp091(properties, body) for _, body, properties in rows.messages]
        assert [m.message for m in run.messages] == expected
        assert {m.filter_value for m in run.messages} == {options.get("filterValue")}
