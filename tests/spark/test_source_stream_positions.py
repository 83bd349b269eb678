"""Where reads of stream queues start and how they are cut: ``startingOffsets`` as a
timestamp and per queue JSON (keywords and offsets; queues not named start at ``next``),
several queues in one read, and ranges cut into ``rowsPerPartition`` partitions that the
executors read as separate tasks. Batch reads, on both brokers."""

from __future__ import annotations

import datetime
import json
import math
import time

import pytest
from pyspark.sql import DataFrame, SparkSession

from tests.spark.conftest import Broker
from tests.spark.inputs import bodies, stream_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def read(spark: SparkSession, broker: Broker, queues: str, **extra: str) -> DataFrame:
    return spark.read.format("amqp").options(**stream_options(broker, queues, **extra)).load()


def positions(df: DataFrame) -> list[tuple[str, int, bytes]]:
    return sorted((r.queue, r.offset, r.body) for r in df.collect())


def test_starting_at_a_timestamp_reads_what_was_published_from_then_on(
    broker: Broker, amqp_spark: SparkSession, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(5, "old"))
    # A whole second after the old messages (the AMQP timestamp has seconds), and before the
    # new ones by a second more.
    moment = math.floor(time.time()) + 2
    time.sleep(moment + 1.1 - time.time())
    broker.publish(stream_queue, bodies(5, "new"))
    since = datetime.datetime.fromtimestamp(moment, datetime.timezone.utc).isoformat()

    df = read(amqp_spark, broker, stream_queue, startingOffsets=since.replace("+00:00", "Z"))

    assert positions(df) == [(stream_queue, 5 + i, b) for i, b in enumerate(bodies(5, "new"))]


def test_per_queue_starting_offsets_take_keywords_and_offsets_and_others_start_at_next(
    broker: Broker, amqp_spark: SparkSession, stream_queue: str
) -> None:
    other = broker.new_stream_queue()
    broker.publish(stream_queue, bodies(6, "a"))
    broker.publish(other, bodies(6, "b"))
    both = f"{stream_queue},{other}"

    mixed = json.dumps({stream_queue: "last", other: 2})
    one_named = json.dumps({stream_queue: "first"})

    assert positions(read(amqp_spark, broker, both, startingOffsets=mixed)) == sorted(
        [(stream_queue, 5, bodies(6, "a")[5])]
        + [(other, i, bodies(6, "b")[i]) for i in range(2, 6)]
    )
    assert positions(read(amqp_spark, broker, both, startingOffsets=one_named)) == [
        (stream_queue, i, b) for i, b in enumerate(bodies(6, "a"))
    ]


def test_a_range_is_cut_into_partitions_of_rows_per_partition(
    broker: Broker, amqp_spark: SparkSession, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(10))

    df = read(amqp_spark, broker, stream_queue, rowsPerPartition="4")

    assert df.rdd.getNumPartitions() == 3  # [0, 4), [4, 8), [8, 10)
    assert positions(df) == [(stream_queue, i, b) for i, b in enumerate(bodies(10))]
