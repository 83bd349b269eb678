"""Stream filtering end to end: the sink tags messages (``filter_value`` column or
``filterValue`` option), the source reads with ``filterValues`` / ``matchUnfiltered``. The
rows are exactly the matching messages on every broker: RabbitMQ 4 and the bundled broker
skip chunks that cannot match, RabbitMQ 3.10 ignores the filter, and the source checks each
message again in all cases."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import stream_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REGIONS = ["eu", "us", None]  # None: a message without a filter value


def write_tagged(amqp_spark: SparkSession, broker: Broker, queue: str, n: int) -> None:
    """Rows ``r<i>`` with filter_value eu, us, none, eu, ... through the sink."""
    rows = [(f"r{i:04d}", REGIONS[i % 3]) for i in range(n)]
    df = amqp_spark.createDataFrame(rows, "body string, filter_value string")
    df.coalesce(1).write.format("amqp").option("uri", broker.url).option("routingKey", queue).mode(
        "append"
    ).save()


def expected(n: int, *regions: str | None) -> list[str]:
    return [f"r{i:04d}" for i in range(n) if REGIONS[i % 3] in regions]


def test_a_batch_read_with_filter_values_returns_exactly_the_matching_rows(
    amqp_spark: SparkSession, broker: Broker, stream_queue: str
) -> None:
    write_tagged(amqp_spark, broker, stream_queue, 300)
    read = amqp_spark.read.format("amqp").options(**stream_options(broker, stream_queue))

    eu = read.option("filterValues", "eu").load().collect()
    both = read.option("filterValues", "eu,us").load().collect()
    with_unfiltered = (
        read.option("filterValues", "us").option("matchUnfiltered", "true").load().collect()
    )

    assert sorted(r.body.decode() for r in eu) == expected(300, "eu")
    assert {r.headers["x-stream-filter-value"] for r in eu} == {"eu"}
    assert sorted(r.body.decode() for r in both) == expected(300, "eu", "us")
    assert sorted(r.body.decode() for r in with_unfiltered) == expected(300, "us", None)


def test_a_streaming_query_with_filter_values_reads_only_new_matching_rows(
    amqp_spark: SparkSession, broker: Broker, queries: Queries, stream_queue: str
) -> None:
    write_tagged(amqp_spark, broker, stream_queue, 90)
    checkpoint = queries.checkpoint()
    opts = stream_options(broker, stream_queue, startingOffsets="first", filterValues="us")

    rows, _ = queries.collect_available_now(opts, checkpoint)
    assert sorted(r.body.decode() for r in rows) == expected(90, "us")

    broker.publish(
        stream_queue, [b"late-eu"], properties={"headers": {"x-stream-filter-value": "eu"}}
    )
    broker.publish(
        stream_queue, [b"late-us"], properties={"headers": {"x-stream-filter-value": "us"}}
    )
    later, _ = queries.collect_available_now(opts, checkpoint)
    assert [r.body for r in later] == [b"late-us"]


def test_the_filter_value_option_tags_every_row(
    amqp_spark: SparkSession, broker: Broker, stream_queue: str
) -> None:
    df = amqp_spark.createDataFrame([("a", "eu"), ("b", None)], "body string, filter_value string")
    df.coalesce(1).write.format("amqp").option("uri", broker.url).option(
        "routingKey", stream_queue
    ).option("filterValue", "all").mode("append").save()

    rows = (
        amqp_spark.read.format("amqp")
        .options(**stream_options(broker, stream_queue, filterValues="all"))
        .load()
        .collect()
    )
    assert sorted(r.body for r in rows) == [b"a", b"b"]
