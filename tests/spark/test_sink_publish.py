"""``df.write.format("amqp")`` against the bundled broker and RabbitMQ, checked with pika."""

from __future__ import annotations

import datetime
from typing import Any

import pika
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from amqp_spark.schema import STRING_PROPERTIES
from tests.spark.sink_support import bound_queue, consume, pika_channel, unique

pytestmark = pytest.mark.spark

WHEN = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)


def write(df: DataFrame, url: str, **options: str) -> None:
    df.write.format("amqp").option("uri", url).options(**options).mode("append").save()


def test_written_rows_arrive_with_identical_bodies_keys_and_properties(
    amqp_spark: SparkSession, broker_url: str
) -> None:
    exchange = unique("sinkx")
    queue = bound_queue(broker_url, exchange, "topic", key="orders.#")
    properties: dict[str, Any] = {name: f"{name}-{{i}}" for name in STRING_PROPERTIES}
    properties.update(expiration="600000", user_id="guest")  # RabbitMQ checks user_id
    rows = [
        {
            "body": f"body-{i}".encode(),
            "routing_key": f"orders.{i}",
            **{name: value.format(i=i) for name, value in properties.items()},
            "delivery_mode": 1 + i % 2,
            "priority": i % 10,
            "timestamp": WHEN + datetime.timedelta(seconds=i),
            "headers": {"n": str(i), "kind": "test"},
        }
        for i in range(50)
    ]
    schema = T.StructType(
        [
            T.StructField("body", T.BinaryType()),
            T.StructField("routing_key", T.StringType()),
            *[T.StructField(name, T.StringType()) for name in properties],
            T.StructField("delivery_mode", T.IntegerType()),
            T.StructField("priority", T.IntegerType()),
            T.StructField("timestamp", T.TimestampType()),
            T.StructField("headers", T.MapType(T.StringType(), T.StringType())),
        ]
    )
    write(amqp_spark.createDataFrame(rows, schema).repartition(3), broker_url, exchange=exchange)

    received = consume(broker_url, queue, len(rows))
    assert len(received) == len(rows)
    by_body = {r.body: r for r in received}
    for row in rows:
        got = by_body[row["body"]]
        assert (got.exchange, got.routing_key) == (exchange, row["routing_key"])
        p = got.properties
        assert {name: getattr(p, name) for name in properties} == {
            name: row[name] for name in properties
        }
        assert (p.delivery_mode, p.priority) == (row["delivery_mode"], row["priority"])
        assert p.timestamp == int(row["timestamp"].timestamp())
        assert p.headers == row["headers"]


def test_read_write_read_round_trip_is_equal(amqp_spark: SparkSession, broker_url: str) -> None:
    exchange = unique("sinkrt")
    first = bound_queue(broker_url, exchange, key="rt")
    with pika_channel(broker_url) as ch:
        for i in range(20):
            ch.basic_publish(
                exchange,
                "rt",
                f"m{i}".encode(),
                pika.BasicProperties(
                    message_id=f"id-{i}",
                    content_type="text/plain",
                    delivery_mode=2,
                    priority=i % 5,
                    timestamp=1_700_000_000 + i,
                    headers={"i": str(i)},
                ),
            )
    second = bound_queue(broker_url, exchange, key="rt")
    with pika_channel(broker_url) as ch:
        ch.queue_unbind(first, exchange, routing_key="rt")

    def read(queue: str) -> DataFrame:
        df = amqp_spark.read.format("amqp").option("uri", broker_url).option("queue", queue)
        return df.load()

    original = read(first).cache()
    assert original.count() == 20
    write(original, broker_url)  # unchanged: receive-only columns are ignored
    receive_only = ["queue", "delivery_tag", "redelivered", "offset"]
    assert_df_equality(
        read(second).drop(*receive_only).orderBy("message_id"),
        original.drop(*receive_only).orderBy("message_id"),
        ignore_nullable=True,
    )


def test_rows_go_to_their_own_exchange_and_routing_key(
    amqp_spark: SparkSession, broker_url: str
) -> None:
    direct, topic = unique("sinkd"), unique("sinkt")
    q_direct = bound_queue(broker_url, direct, "direct", key="a")
    q_topic = bound_queue(broker_url, topic, "topic", key="b.*")
    q_default = bound_queue(broker_url, "")
    rows = [
        (b"1", direct, "a"),
        (b"2", topic, "b.x"),
        (b"3", direct, "a"),
        (b"4", "", q_default),
        (b"5", direct, "not-bound"),
        (b"6", topic, "b.y"),
    ]
    df = amqp_spark.createDataFrame(rows, "body binary, exchange string, routing_key string")
    write(df.coalesce(1), broker_url)

    def bodies(queue: str, count: int) -> list[bytes]:
        return [m.body for m in consume(broker_url, queue, count, timeout=20)]

    assert bodies(q_direct, 2) == [b"1", b"3"]
    assert bodies(q_topic, 2) == [b"2", b"6"]
    assert bodies(q_default, 1) == [b"4"]


def test_unroutable_mandatory_message_fails_the_write(
    amqp_spark: SparkSession, broker_url: str
) -> None:
    exchange = unique("sinkm")
    bound_queue(broker_url, exchange, key="bound")
    df = amqp_spark.createDataFrame(
        [(b"ok", "bound"), (b"lost", "nowhere"), (b"lost too", "nowhere")],
        "body binary, routing_key string",
    )
    with pytest.raises(Exception, match=r"2 message\(s\) were returned unroutable"):
        write(df.coalesce(1), broker_url, exchange=exchange, mandatory="true")


def test_missing_exchange_fails_with_its_name(amqp_spark: SparkSession, broker_url: str) -> None:
    df = amqp_spark.createDataFrame([(b"x",)], "body binary")
    missing = unique("nosuch")
    with pytest.raises(Exception, match=f"exchange '{missing}' cannot be published to.*404"):
        write(df, broker_url, exchange=missing)


def test_dataframe_without_body_fails_at_start_listing_expected_and_given(
    amqp_spark: SparkSession,
) -> None:
    df = amqp_spark.range(3).select(F.col("id").cast("string").alias("payload"))
    with pytest.raises(Exception) as caught:
        write(df, "amqp://guest:guest@127.0.0.1:1/%2F")  # no broker needed: fails before
    text = str(caught.value)
    assert "column 'body' is missing" in text
    assert "'payload' is not a sink column" in text
    assert "Expected: body (required)" in text and "Given: struct<payload:string>" in text


def test_column_of_the_wrong_type_fails_at_start(amqp_spark: SparkSession) -> None:
    df = amqp_spark.range(3).select(F.lit(b"x").alias("body"), F.col("id").alias("message_id"))
    with pytest.raises(Exception, match="column 'message_id' is bigint, expected string"):
        write(df, "amqp://guest:guest@127.0.0.1:1/%2F")
