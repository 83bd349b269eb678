"""The sink's ``stream`` option: rows written into a stream queue over RabbitMQ's stream
protocol, exactly once, on the bundled broker and on RabbitMQ 4, when Spark writes a batch
again: a query restarted after the write and before the commit, a task retried after it
failed near its end. What the stream holds is read back with rstream (an independent
client) and counted per message id."""

from __future__ import annotations

import collections
import json
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

from amqp_protocol.amqp10 import to_amqp091
from amqp_spark.client import connect
from amqp_spark.sink.super_stream import hash_partition
from tests.spark import retried_task_job
from tests.spark.stream_dedup_client import message_ids_in_stream, stored_messages
from tests.support.super_streams import declare_over_amqp

pytestmark = [pytest.mark.spark]

ROWS = 3000


def new_stream(url: str) -> str:
    name = f"sink-sp-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    return name


def stream_writer(
    spark: SparkSession, tmp_path: Path, url: str, stream_uri: str, stream: str
) -> DataStreamWriter:
    """An AvailableNow query writing ``ROWS`` rows of one JSON file (one partition) into
    ``stream`` over the stream protocol."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.json").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(ROWS)))
    rows = spark.readStream.schema("n long").json(str(source))
    return (
        rows.select(F.format_string("row-%d", "n").alias("body"))
        .writeStream.format("amqp")
        .option("uri", url)
        .option("stream", stream)
        .option("streamUri", stream_uri)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
    )


@pytest.mark.versions
def test_a_batch_replayed_after_a_restart_before_its_commit_adds_no_row_twice(
    stream_urls: tuple[str, str], amqp_spark: SparkSession, tmp_path: Path
) -> None:
    url, stream_uri = stream_urls
    stream = new_stream(url)
    writer = stream_writer(amqp_spark, tmp_path, url, stream_uri, stream)
    first = writer.start()
    assert first.awaitTermination(180)
    assert first.exception() is None
    # As if the query had stopped after the write and before Spark logged the commit.
    for written in ("0", ".0.crc"):  # the commit and its checksum
        (tmp_path / "ck" / "commits" / written).unlink()

    again = writer.start()
    assert again.awaitTermination(180)
    assert again.exception() is None

    assert again.id == first.id
    replayed = [p for p in again.recentProgress if p["batchId"] == 0]
    assert [p["numInputRows"] for p in replayed] == [ROWS]  # batch 0 was written again
    counts = message_ids_in_stream(stream_uri, stream)
    assert counts == {f"{first.id}:0:0:{i}": 1 for i in range(ROWS)}


def test_a_super_stream_over_the_stream_protocol_gets_each_row_in_its_keys_partition(
    stream_urls: tuple[str, str], amqp_spark: SparkSession
) -> None:
    url, stream_uri = stream_urls
    name = f"sink-ss-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        partitions = declare_over_amqp(ch, name, ["0", "1", "2"])
    rows = amqp_spark.range(300).select(
        F.format_string("row-%d", "id").alias("body"),
        F.format_string("key-%d", F.col("id") % 10).alias("routing_key"),
    )
    rows.repartition(2).write.format("amqp").option("uri", url).option("superStream", name).option(
        "streamProtocol", "stream"
    ).option("streamUri", stream_uri).mode("append").save()

    expected: dict[str, set[bytes]] = {p: set() for p in partitions}
    for i in range(300):
        expected[partitions[hash_partition(f"key-{i % 10}", 3)]].add(f"row-{i}".encode())
    for partition in partitions:
        stored = stored_messages(stream_uri, partition)
        assert len(stored) == len(set(stored))
        assert {to_amqp091(m, partition).body for m in stored} == expected[partition]


def test_a_task_that_fails_once_near_its_end_and_is_retried_stores_every_row_once(
    stream_urls: tuple[str, str], tmp_path: Path
) -> None:
    url, stream_uri = stream_urls
    stream = new_stream(url)
    fail_at = ROWS - 50
    query = retried_task_job.run(url, stream_uri, stream, ROWS, fail_at, tmp_path)

    stored = [to_amqp091(m, stream) for m in stored_messages(stream_uri, stream)]
    counts = collections.Counter(m.properties["message_id"] for m in stored)
    assert counts == {f"{query}:0:0:{i}": 1 for i in range(ROWS)}
    # The first attempt stored a part of the rows, the retry only the rest.
    attempts = [m.body.decode().split(":")[1] for m in stored]
    first = attempts.count("attempt-0")
    assert 0 < first < fail_at
    assert attempts == ["attempt-0"] * first + ["attempt-1"] * (ROWS - first)
