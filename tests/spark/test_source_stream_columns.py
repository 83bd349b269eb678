"""Rows of a stream queue, every column: messages carrying every basic property and headers of
every AMQP field type a stream queue keeps, read by a streaming query and by a batch read,
equal rows built here from what was published. Both brokers."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from amqp_spark.schema import spark_schema
from tests.spark.conftest import Broker
from tests.spark.inputs import stream_options
from tests.spark.test_source_round_trip import HEADERS, PROPERTIES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MESSAGES = 5
#: The header types a RabbitMQ 3.10 stream queue keeps. It stores messages as AMQP 1.0 and
#: its conversion drops nested tables and arrays from the headers without a word, and closes
#: the publisher's connection (541 INTERNAL_ERROR) on a decimal.
STREAM_HEADERS = {
    name: header for name, header in HEADERS.items() if name not in ("decimal", "table", "array")
}
ROUTING_KEY = "columns"


@pytest.fixture
def exchange(broker: Broker) -> Iterator[str]:
    name = f"cols-{uuid.uuid4().hex[:8]}"
    broker.ch.exchange_declare(name, "direct")
    yield name
    broker.ch.exchange_delete(name)


def properties(i: int) -> dict[str, object]:
    headers = {name: value for name, (value, _) in STREAM_HEADERS.items()}
    return {**PROPERTIES, "message_id": f"id-{i}", "headers": headers}


def expected(spark: SparkSession, queue: str, exchange: str) -> DataFrame:
    """The rows of the messages published by the test, as documented in docs/source.md."""
    rendered = {name: text for name, (_, text) in STREAM_HEADERS.items()}
    stamp = datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)  # 1.7e9
    rows = [
        {
            "body": f"body-{i}".encode(),
            "routing_key": ROUTING_KEY,
            "exchange": exchange,
            "queue": queue,
            "delivery_tag": i + 1,  # one consumer from the first offset: tags count from 1
            "redelivered": False,
            "offset": i,
            **PROPERTIES,
            "timestamp": stamp,
            "message_id": f"id-{i}",
            # The stream's own header is part of the delivered table (RabbitMQ adds it).
            "headers": {**rendered, "x-stream-offset": str(i)},
        }
        for i in range(MESSAGES)
    ]
    return spark.createDataFrame(rows, spark_schema())


def read_by_a_streaming_query(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    name = f"cols_{uuid.uuid4().hex[:8]}"
    query = (
        spark.readStream.format("amqp")
        .options(**options)
        .load()
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "AvailableNow run did not end within 120 s"
        assert query.exception() is None
        return spark.table(name)
    finally:
        query.stop()


def test_stream_queue_rows_hold_every_property_header_and_position(
    broker: Broker, amqp_spark: SparkSession, stream_queue: str, exchange: str
) -> None:
    broker.ch.queue_bind(stream_queue, exchange, routing_key=ROUTING_KEY)
    for i in range(MESSAGES):
        broker.publish(ROUTING_KEY, [f"body-{i}".encode()], exchange, properties(i))
    options = stream_options(broker, stream_queue, startingOffsets="first")
    want = expected(amqp_spark, stream_queue, exchange)

    streamed = read_by_a_streaming_query(amqp_spark, options)
    batch = amqp_spark.read.format("amqp").options(**options).load()

    for got in (streamed, batch):
        assert_df_equality(got.orderBy("offset"), want.orderBy("offset"), ignore_nullable=True)
