"""A row written by the sink reads back identical: messages carrying every basic property and
headers of every AMQP field type are read by the source, written back by the sink unchanged
and read again. Both brokers."""

from __future__ import annotations

import datetime
import decimal
import uuid

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from tests.spark.conftest import Broker

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: A header of each field-table value type and how the source renders it.
HEADERS = {
    "str": ("s", "s"),
    "int": (-7, "-7"),
    "long": (2**40, str(2**40)),
    "bool": (True, "true"),
    "float": (1.5, "1.5"),
    "decimal": (decimal.Decimal("3.14"), "3.14"),
    "bytes": (b"\xff\x00", "base64:/wA="),
    "time": (
        datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "2024-01-02T03:04:05+00:00",
    ),
    "table": ({"a": [1, "x"]}, '{"a": [1, "x"]}'),
    "array": ([True, None], "[true, null]"),
    "void": (None, None),
}
PROPERTIES = {
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "delivery_mode": 2,
    "priority": 7,
    "correlation_id": "corr",
    "reply_to": "replies",
    "expiration": "600000",
    "type": "order",
    "user_id": "guest",  # RabbitMQ checks it against the connection's user
    "app_id": "tests",
    "timestamp": 1_700_000_000,
}
RECEIVE_ONLY = ["queue", "delivery_tag", "redelivered", "offset"]


def read(spark: SparkSession, broker: Broker, queue: str) -> DataFrame:
    df = spark.read.format("amqp").option("uri", broker.url).option("queue", queue)
    return df.option("ackBatchReads", "true").load().cache()


def test_every_property_and_header_type_reads_back_identical_after_a_sink_round_trip(
    broker: Broker, amqp_spark: SparkSession
) -> None:
    exchange = f"rt-{uuid.uuid4().hex[:8]}"
    broker.ch.exchange_declare(exchange, "direct")
    first, second = broker.new_queue(), broker.new_queue()
    broker.ch.queue_bind(first, exchange, routing_key="rt")
    try:
        for i in range(3):
            headers = {name: value for name, (value, _) in HEADERS.items()}
            properties = {**PROPERTIES, "message_id": f"id-{i}", "headers": headers}
            broker.publish("rt", [f"body-{i}".encode()], exchange=exchange, properties=properties)
        original = read(amqp_spark, broker, first)
        broker.ch.queue_bind(second, exchange, routing_key="rt")

        original.write.format("amqp").option("uri", broker.url).mode("append").save()
        again = read(amqp_spark, broker, second)

        assert [dict(r.headers) for r in original.collect()] == [
            {name: rendered for name, (_, rendered) in HEADERS.items()}
        ] * 3
        assert {(r.exchange, r.routing_key) for r in original.collect()} == {(exchange, "rt")}
        assert_df_equality(
            again.drop(*RECEIVE_ONLY).orderBy("message_id"),
            original.drop(*RECEIVE_ONLY).orderBy("message_id"),
            ignore_nullable=True,
        )
    finally:
        broker.ch.exchange_delete(exchange)
