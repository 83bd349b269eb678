"""Stream queues read over RabbitMQ's stream protocol and over AMQP 0-9-1: the same rows,
every column (but the delivery tag, which belongs to a 0-9-1 channel), on the bundled broker
(``--stream-port``) and on RabbitMQ 4 (``rabbitmq_stream``); ``auto`` falls back to 0-9-1
when nothing answers on the stream protocol's port."""

from __future__ import annotations

import logging
import uuid

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from amqp_spark.client import connect
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.reader_choice import micro_batch_reader
from amqp_spark.source.stream_queues.stream_queue_micro_batch import (
    StreamProtocolMicroBatchReader,
    StreamQueueMicroBatchReader,
)
from amqp_spark.stream_filter import FILTER_VALUE_HEADER
from testbed.ports import free_port
from tests.spark.test_source_round_trip import HEADERS, PROPERTIES
from tests.spark.test_source_stream_columns import read_by_a_streaming_query
from tests.stream_source.streams import stream_of
from tests.support.super_streams import declare_over_amqp

pytestmark = [pytest.mark.spark]

MESSAGES = 2_500
#: Header types a stream keeps on both brokers (RabbitMQ drops nested tables and arrays and
#: refuses decimals: tests/spark/test_source_stream_columns.py).
STREAM_HEADERS = {n: v for n, (v, _) in HEADERS.items() if n not in ("decimal", "table", "array")}


def publish_stream(url: str, count: int) -> str:
    """A new stream queue with ``count`` messages, each with every property and headers."""
    queue = f"sp-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_select()
        for i in range(count):
            props = {**PROPERTIES, "message_id": f"id-{i}", "headers": dict(STREAM_HEADERS)}
            ch.basic_publish("", queue, f"body-{i}".encode(), props)
        ch.wait_for_confirms()
    return queue


@pytest.mark.versions
def test_rows_over_the_stream_protocol_equal_rows_over_amqp_0_9_1(
    stream_urls: tuple[str, str], amqp_spark: SparkSession
) -> None:
    url, stream_uri = stream_urls
    queue = publish_stream(url, MESSAGES)
    # three ranges, read by two tasks at once
    options = from_first(url, stream_uri, queue, rowsPerPartition="1000")
    over_protocol = rows_equal_over_both_protocols(amqp_spark, options)

    assert over_protocol.count() == MESSAGES
    assert over_protocol.select("offset").distinct().count() == MESSAGES
    assert over_protocol.where("delivery_tag IS NOT NULL").count() == 0


def from_first(url: str, stream_uri: str, queue: str, **more: str) -> dict[str, str]:
    """A streaming query's options reading ``queue`` from its first offset."""
    return {
        "uri": url,
        "queue": queue,
        "queueType": "stream",
        "startingOffsets": "first",
        "streamUri": stream_uri,
        **more,
    }


def rows_equal_over_both_protocols(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    """The rows a streaming query with ``options`` reads over the stream protocol, checked
    to equal those over AMQP 0-9-1 in every column but the delivery tag."""
    over_protocol = read_by_a_streaming_query(spark, {**options, "streamProtocol": "stream"})
    over_amqp = read_by_a_streaming_query(spark, {**options, "streamProtocol": "amqp"})
    assert_df_equality(
        over_protocol.drop("delivery_tag").orderBy("offset"),
        over_amqp.drop("delivery_tag").orderBy("offset"),
        ignore_nullable=True,
    )
    return over_protocol


def test_a_filtered_query_reads_the_same_rows_over_both_protocols(
    stream_urls: tuple[str, str], amqp_spark: SparkSession
) -> None:
    """``filterValues`` over the stream protocol: the chunks the broker skips, the messages of
    the chunks it sends that do not match dropped by the reader, as over 0-9-1."""
    url, stream_uri = stream_urls
    groups = (
        [
            (
                f"{batch}-{i}-{value}".encode(),
                {**PROPERTIES, "headers": {FILTER_VALUE_HEADER: value}},
            )
            for i, value in enumerate(values)
        ]
        for batch, values in enumerate((["eu", "us"] * 20, ["us"] * 30, ["eu"] * 5, ["us"] * 9))
    )
    with stream_of(url, *groups) as queue:
        options = from_first(url, stream_uri, queue, filterValues="eu", rowsPerPartition="40")
        over_protocol = rows_equal_over_both_protocols(amqp_spark, options)

    bodies = sorted(bytes(row.body) for row in over_protocol.select("body").collect())
    assert len(bodies) == 25 and all(body.endswith(b"-eu") for body in bodies)


def test_a_batch_read_reads_the_same_rows_over_both_protocols(
    stream_urls: tuple[str, str], amqp_spark: SparkSession
) -> None:
    url, stream_uri = stream_urls
    queue = publish_stream(url, 300)
    options = {
        "uri": url,
        "queue": queue,
        "queueType": "stream",
        "streamUri": stream_uri,
        "endingOffsets": f'{{"{queue}": 250}}',
        "rowsPerPartition": "100",
    }

    def read(protocol: str) -> DataFrame:
        found = amqp_spark.read.format("amqp").options(**options, streamProtocol=protocol)
        return found.load().drop("delivery_tag").orderBy("offset")

    over_protocol = read("stream")
    offsets = [row.offset for row in over_protocol.select("offset").collect()]
    assert offsets == list(range(offsets[0], 250))  # from the stream's first offset
    assert_df_equality(over_protocol, read("amqp"), ignore_nullable=True)


def test_auto_reads_over_the_stream_protocol_where_it_answers(
    stream_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, stream_uri = stream_urls
    given = {"uri": url, "queue": "q", "queueType": "stream", "streamUri": stream_uri}
    with caplog.at_level(logging.INFO, logger="amqp_spark.source"):
        reader = micro_batch_reader(SourceOptions.parse(given))
    assert isinstance(reader, StreamProtocolMicroBatchReader)
    assert "over the stream protocol" in caplog.text
    assert "guest:guest" not in caplog.text


def test_auto_falls_back_to_amqp_0_9_1_when_no_stream_port_answers(
    stream_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = stream_urls
    port = free_port()  # nothing listens on it
    nowhere = f"rabbitmq-stream://guest:guest@127.0.0.1:{port}/%2F"
    given = {"uri": url, "queue": "q", "queueType": "stream", "streamUri": nowhere}
    with caplog.at_level(logging.INFO, logger="amqp_spark.source"):
        reader = micro_batch_reader(SourceOptions.parse(given))
    assert type(reader) is StreamQueueMicroBatchReader
    assert f"does not answer at rabbitmq-stream://guest:***@127.0.0.1:{port}" in caplog.text


def test_a_super_stream_reads_the_same_over_both_protocols(
    stream_urls: tuple[str, str], amqp_spark: SparkSession
) -> None:
    url, stream_uri = stream_urls
    name = f"ssp-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        partitions = declare_over_amqp(ch, name, ["0", "1", "2"])
        ch.confirm_select()
        for index, count in enumerate((12, 7, 5)):
            for i in range(count):
                ch.basic_publish(name, str(index), f"p{index}-{i}".encode())
        ch.wait_for_confirms()
    try:
        options = {
            "uri": url,
            "superStream": name,
            "streamUri": stream_uri,
            "startingOffsets": "first",
        }
        got = {
            protocol: sorted(
                (r.queue, r.offset, bytes(r.body))
                for r in read_by_a_streaming_query(
                    amqp_spark, {**options, "streamProtocol": protocol}
                ).collect()
            )
            for protocol in ("stream", "amqp")
        }
        assert got["stream"] == got["amqp"]
        assert [sum(1 for q, _, _ in got["stream"] if q == p) for p in partitions] == [12, 7, 5]
    finally:
        with connect(url) as conn, conn.channel() as ch:
            for stream in partitions:
                ch.queue_delete(stream)
            ch.exchange_delete(name)
