"""``trigger(once=True)``: classic queues ack the run's only batch when Spark committed it
(the source option ``checkpointLocation`` names the query's checkpoint); stream queues replay
exact ranges. Both brokers."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Row, SparkSession

from amqp_spark.options import OptionError
from amqp_spark.source.options import SourceOptions
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import bodies, stream_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ONCE = {"once": True}


def run_once(queries: Queries, options: dict[str, str], checkpoint: str) -> list[Row]:
    """The rows of one once run (which must succeed)."""
    rows: list[Row] = []
    query = queries.start(options, checkpoint, lambda df, _: rows.extend(df.collect()), ONCE)
    assert query.awaitTermination(180), "once run did not end within 180 s"
    assert query.exception() is None
    return rows


def predictable_columns(spark: SparkSession, rows: list[Row]) -> DataFrame:
    columns = ["body", "routing_key", "exchange", "queue", "redelivered", "offset"]
    return spark.createDataFrame(
        [tuple(r[c] for c in columns) for r in rows],
        "body binary, routing_key string, exchange string, queue string, "
        "redelivered boolean, offset bigint",
    ).orderBy("body")


def expected_classic(spark: SparkSession, queue: str, messages: list[bytes]) -> DataFrame:
    return predictable_columns(
        spark,
        [
            Row(body=b, routing_key=queue, exchange="", queue=queue, redelivered=False, offset=None)
            for b in messages
        ],
    )


def test_once_runs_with_checkpoint_location_read_each_message_once_and_empty_the_queue(
    broker: Broker, queries: Queries, amqp_spark: SparkSession
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(25))
    checkpoint = queries.checkpoint()
    opts = {"uri": broker.url, "queue": queue, "checkpointLocation": checkpoint}

    first = run_once(queries, opts, checkpoint)

    assert_df_equality(
        predictable_columns(amqp_spark, first), expected_classic(amqp_spark, queue, bodies(25))
    )
    assert ready_once_unconsumed(broker, queue) == 0, "the committed batch was not acked"

    broker.publish(queue, bodies(7, "new"))
    second = run_once(queries, opts, checkpoint)

    assert_df_equality(
        predictable_columns(amqp_spark, second),
        expected_classic(amqp_spark, queue, bodies(7, "new")),
    )
    assert ready_once_unconsumed(broker, queue) == 0


def test_once_run_that_fails_acks_nothing_and_a_later_run_reads_it_all_again(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(12))
    checkpoint = queries.checkpoint()
    opts = {"uri": broker.url, "queue": queue, "checkpointLocation": checkpoint}

    def failing_sink(df: DataFrame, batch_id: int) -> None:
        raise RuntimeError("sink fails before the batch is committed")

    query = queries.start(opts, checkpoint, failing_sink, ONCE)
    with pytest.raises(StreamingQueryException, match="sink fails"):
        query.awaitTermination(180)

    assert ready_once_unconsumed(broker, queue) == 12
    assert not (Path(checkpoint) / "commits" / "0").exists()
    # The next run replays the failed batch, planned empty: its tags were of a dead connection.
    assert run_once(queries, opts, checkpoint) == []
    assert ready_once_unconsumed(broker, queue) == 12
    rows = run_once(queries, opts, checkpoint)
    assert sorted(r.body for r in rows) == bodies(12)
    assert all(r.redelivered for r in rows)
    assert ready_once_unconsumed(broker, queue) == 0


def test_once_on_classic_queues_without_checkpoint_location_fails_naming_option_and_alternative(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(5))

    query = queries.start(
        {"uri": broker.url, "queue": queue}, queries.checkpoint(), lambda df, _: None, ONCE
    )

    with pytest.raises(StreamingQueryException) as failure:
        query.awaitTermination(180)
    assert "'checkpointLocation'" in str(failure.value)
    assert "trigger(availableNow=True)" in str(failure.value)
    assert ready_once_unconsumed(broker, queue) == 5


@pytest.mark.parametrize("broker_url", ["bundled"], indirect=True)  # the broker plays no part
def test_once_with_a_checkpoint_location_that_is_no_checkpoint_fails_naming_it(
    broker: Broker, queries: Queries, tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-dir")
    opts = {"uri": broker.url, "queue": broker.new_queue(), "checkpointLocation": missing}

    query = queries.start(opts, queries.checkpoint(), lambda df, _: None, ONCE)

    with pytest.raises(
        StreamingQueryException,
        match=f"amqp option 'checkpointLocation': got '{missing}'.*it does not exist",
    ):
        query.awaitTermination(180)


@pytest.mark.parametrize(
    ("value", "path"),
    [("/data/ck", "/data/ck"), ("file:///data/my%20ck", "/data/my ck"), ("file:/d", "/d")],
)
def test_checkpoint_location_takes_local_paths_and_file_uris(value: str, path: str) -> None:
    parsed = SourceOptions.parse({"uri": "amqp://h", "queue": "q", "checkpointlocation": value})

    assert parsed.checkpoint_location == Path(path)


@pytest.mark.parametrize("value", ["s3a://bucket/ck", "dbfs:/ck", "file://otherhost/ck", " "])
def test_checkpoint_location_refuses_what_is_not_a_local_path(value: str) -> None:
    with pytest.raises(OptionError, match="'checkpointLocation'.*a local path or a file: URI"):
        SourceOptions.parse({"uri": "amqp://h", "queue": "q", "checkpointlocation": value})


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p.write_text("x"), "it is not a directory"),
        (lambda p: p.mkdir(), "no 'metadata' file"),
    ],
)
def test_checkpoint_location_must_hold_a_query_checkpoint_when_used(
    tmp_path: Path, make: object, problem: str
) -> None:
    target = tmp_path / "ck"
    make(target)  # type: ignore[operator]
    opts = SourceOptions.parse({"uri": "amqp://h", "queue": "q", "checkpointlocation": str(target)})

    with pytest.raises(OptionError, match=problem):
        opts.query_checkpoint()


def test_once_on_a_stream_queue_reads_what_is_there_then_only_what_came_after(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(9))
    checkpoint = queries.checkpoint()
    opts = stream_options(broker, stream_queue, startingOffsets="first")

    first = run_once(queries, opts, checkpoint)
    broker.publish(stream_queue, bodies(4, "new"))
    second = run_once(queries, opts, checkpoint)

    assert sorted((r.offset, r.body) for r in first) == list(enumerate(bodies(9)))
    assert sorted((r.offset, r.body) for r in second) == list(enumerate(bodies(4, "new"), start=9))
