"""What the connector does on every supported PySpark (4.0 to 4.3): the tests that
scripts/test.sh runs in each older PySpark's venv (marker ``versions``, with a few others
so marked), against the bundled broker and RabbitMQ 4. Where PySpark has no admission
control (4.0, 4.1) an AvailableNow run is one batch (docs/pyspark-versions.md): the tests
say so where it shows."""

from __future__ import annotations

import datetime
import time
import uuid
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from amqp_spark import spark_api
from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import bodies, classic_options, stream_options
from tests.support import fixtures
from tests.support.connect_session import run_available_now

pytestmark = [pytest.mark.spark, pytest.mark.versions, pytest.mark.slow]

WHEN = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)


@pytest.fixture(params=fixtures.broker_params("bundled", "rabbitmq"))
def broker_url(request: pytest.FixtureRequest) -> str:
    """The bundled broker and RabbitMQ 4."""
    return fixtures.broker_url_of(request)


def version() -> tuple[int, int]:
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def test_capabilities_are_those_the_installed_pyspark_has() -> None:
    """Measured per version (docs/pyspark-versions.md): admission control from 4.2, the
    streaming Arrow writer from 4.1."""
    assert version() >= (4, 0)
    assert (version() >= (4, 2)) == spark_api.ADMISSION_CONTROL
    assert (version() >= (4, 1)) == spark_api.STREAM_ARROW_WRITER


def test_batch_read_of_a_classic_queue_takes_every_message(
    broker: Broker, amqp_spark: SparkSession
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(30))

    df = amqp_spark.read.format("amqp").options(**classic_options(broker, queue))
    rows = df.option("ackBatchReads", "true").load().collect()

    assert sorted(r.body for r in rows) == bodies(30)
    assert broker.wait_ready(queue, 0) == 0


def taken(broker: Broker, queue: str) -> list[Any]:
    """Every message of ``queue``, taken with basic.get."""
    got = []
    while (delivery := broker.ch.basic_get(queue, no_ack=True)) is not None:
        got.append(delivery)
    return got


def into_sink(
    spark: SparkSession, source: dict[str, str], target: str, url: str, checkpoint: str
) -> None:
    """An AvailableNow run of ``source`` into the sink, to ``target`` through the default
    exchange, with a timestamp and headers added (the row writer converts both on 4.0)."""
    df = spark.readStream.format("amqp").options(**source).load()
    out = df.select(
        "body",
        F.lit(WHEN).alias("timestamp"),
        F.create_map(F.lit("from"), F.col("queue")).alias("headers"),
    )
    run_available_now(
        lambda: (
            out.writeStream.format("amqp")
            .option("uri", url)
            .option("routingKey", target)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
    )


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_available_now_stream_into_the_sink_moves_every_message_once_and_acks_the_last_batch(
    broker: Broker, amqp_spark: SparkSession, tmp_path: Path, queue_type: str
) -> None:
    arguments = {"x-queue-type": queue_type} if queue_type == "quorum" else None
    source = broker.new_queue(arguments=arguments, durable=queue_type == "quorum")
    target = broker.new_queue()
    checkpoint = str(tmp_path / "ck")
    # checkpointLocation: PySpark 4.0 and 4.1 need it for every classic-queue stream.
    options = classic_options(broker, source, queueType=queue_type, checkpointLocation=checkpoint)
    broker.publish(source, bodies(40))

    into_sink(amqp_spark, options, target, broker.url, checkpoint)

    assert broker.wait_ready(source, 0) == 0, "the run's last batch was not acked"
    first = taken(broker, target)
    assert sorted(d.body for d in first) == bodies(40)
    assert {d.properties.timestamp for d in first} == {int(WHEN.timestamp())}
    assert {tuple(d.properties.headers.items()) for d in first} == {(("from", source),)}

    broker.publish(source, bodies(5, "later"))
    into_sink(amqp_spark, options, target, broker.url, checkpoint)
    assert sorted(d.body for d in taken(broker, target)) == bodies(5, "later"), "read twice"
    assert broker.wait_ready(source, 0) == 0


def test_a_failed_stream_run_acks_nothing_and_the_broker_keeps_every_message(
    broker: Broker, amqp_spark: SparkSession, tmp_path: Path
) -> None:
    source = broker.new_queue()
    checkpoint = str(tmp_path / "ck")
    broker.publish(source, bodies(12))
    df = amqp_spark.readStream.format("amqp")
    df = df.options(**classic_options(broker, source, checkpointLocation=checkpoint)).load()
    query = (
        df.select("body")
        .writeStream.format("amqp")
        .option("uri", broker.url)
        .option("exchange", f"no-such-exchange-{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="no-such-exchange"):
        query.awaitTermination(180)

    assert broker.wait_ready(source, 12) == 12, "a batch Spark did not commit was acked"


def available_now_run(queries: Queries, options: dict[str, str], checkpoint: str) -> list[Row]:
    """The rows one AvailableNow run reads (started once more if a Python worker of Spark's
    was too slow to start: tests/support/connect_session.py)."""
    rows: list[Row] = []
    run_available_now(
        lambda: queries.start(options, checkpoint, lambda df, _: rows.extend(df.collect()))
    )
    return rows


def available_now_runs(
    queries: Queries, options: dict[str, str], checkpoint: str, most: int = 5
) -> list[list[Row]]:
    """The rows of AvailableNow runs from ``checkpoint`` until one reads nothing (at most
    ``most`` runs)."""
    runs: list[list[Row]] = []
    for _ in range(most):
        rows = available_now_run(queries, options, checkpoint)
        if not rows:
            return runs
        runs.append(rows)
    raise AssertionError(f"still reading after {most} AvailableNow runs")


def test_stream_queue_batch_and_available_now_reads_give_every_offset_once(
    broker: Broker, amqp_spark: SparkSession, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(30))
    options = stream_options(broker, stream_queue, startingOffsets="first")

    batch = amqp_spark.read.format("amqp").options(**options).load().collect()
    assert sorted((r.offset, r.body) for r in batch) == list(enumerate(bodies(30)))

    checkpoint = queries.checkpoint()
    limited = {**options, "maxMessagesPerTrigger": "12"}
    runs = available_now_runs(queries, limited, checkpoint)
    every = [(r.offset, r.body) for rows in runs for r in rows]
    assert sorted(every) == list(enumerate(bodies(30)))
    # Without admission control Spark runs AvailableNow as one batch, of at most 12 here.
    assert len(runs) == (1 if spark_api.ADMISSION_CONTROL else 3)

    broker.publish(stream_queue, bodies(5, "new"))
    [rows] = available_now_runs(queries, limited, checkpoint)
    assert sorted((r.offset, r.body) for r in rows) == list(enumerate(bodies(5, "new"), 30))


def test_processing_time_stream_keeps_max_messages_per_trigger_and_resumes_after_restart(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    checkpoint = queries.checkpoint()
    options = classic_options(
        broker, queue, maxMessagesPerTrigger="10", checkpointLocation=checkpoint
    )
    sizes: list[int] = []
    seen: list[bytes] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        got = [r.body for r in df.collect()]
        seen.extend(got)
        sizes.append(len(got))

    broker.publish(queue, bodies(25))
    query = queries.start(options, checkpoint, sink, trigger={"processingTime": "500 milliseconds"})
    wait_for(lambda: len(seen) >= 25 and all_committed(checkpoint), query)
    query.stop()
    assert sorted(seen) == bodies(25)
    assert max(sizes) <= 10
    assert broker.wait_ready(queue, 0) == 0, "the last batch was not acked when the query stopped"

    broker.publish(queue, bodies(5, "after"))
    restarted = queries.start(
        options, checkpoint, sink, trigger={"processingTime": "500 milliseconds"}
    )
    wait_for(lambda: len(seen) >= 30 and all_committed(checkpoint), restarted)
    restarted.stop()
    assert sorted(seen) == sorted(bodies(25) + bodies(5, "after"))


def all_committed(checkpoint: str) -> bool:
    """Whether Spark committed every batch it planned in ``checkpoint`` (a batch the query
    is stopped in before its commit is, rightly, read again after the restart)."""
    planned = {p.name for p in Path(checkpoint, "offsets").glob("[0-9]*")}
    committed = {p.name for p in Path(checkpoint, "commits").glob("[0-9]*")}
    return bool(planned) and planned <= committed


def wait_for(done: Any, query: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        assert query.exception() is None, query.exception()
        time.sleep(0.2)
    assert done(), f"not done within {timeout} s"
