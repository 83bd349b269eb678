"""Stream queues: batches are offset ranges read by the executors; replays are exact, so a
restarted query has no gap and no duplicate (with a sink idempotent per batch)."""

from __future__ import annotations

import json
import time

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Row, SparkSession

from testbed.waiting import wait_until
from tests.spark.conftest import Broker, Queries, RestartableBroker
from tests.spark.inputs import bodies, stream_options
from tests.spark.progress import as_dict

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_stream_reads_every_offset_once_and_later_runs_only_new_messages(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(30))
    checkpoint = queries.checkpoint()
    opts = stream_options(broker, stream_queue, startingOffsets="first", maxMessagesPerTrigger="8")

    rows, sizes = queries.collect_available_now(opts, checkpoint)

    assert [(r.offset, r.body) for r in sorted(rows, key=lambda r: r.offset)] == list(
        enumerate(bodies(30))
    )
    assert max(sizes) <= 8
    assert queries.collect_available_now(opts, checkpoint)[0] == []
    broker.publish(stream_queue, bodies(5, "new"))
    later, _ = queries.collect_available_now(opts, checkpoint)
    assert sorted(r.body for r in later) == bodies(5, "new")
    assert sorted(r.offset for r in later) == list(range(30, 35))


def test_restart_after_failure_has_no_gap_and_no_duplicate(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(40))
    checkpoint = queries.checkpoint()
    opts = stream_options(broker, stream_queue, startingOffsets="first", maxMessagesPerTrigger="10")
    by_batch: dict[int, list[bytes]] = {}  # an idempotent sink: a replayed batch overwrites
    failed: list[int] = []

    def dies_in_third_batch(df: DataFrame, batch_id: int) -> None:
        if batch_id == 2 and not failed:
            failed.append(batch_id)
            raise RuntimeError("killed mid-stream")
        by_batch[batch_id] = [r.body for r in df.collect()]

    query = queries.start(opts, checkpoint, dies_in_third_batch)
    with pytest.raises(StreamingQueryException, match="killed mid-stream"):
        query.awaitTermination(120)
    assert sorted(by_batch) == [0, 1]
    query = queries.start(opts, checkpoint, dies_in_third_batch)
    assert query.awaitTermination(120)

    everything = [body for batch in by_batch.values() for body in batch]
    assert sorted(everything) == bodies(40)


def test_starting_at_last_reads_only_the_last_message(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(6))

    rows, _ = queries.collect_available_now(
        stream_options(broker, stream_queue, startingOffsets="last")
    )

    assert [(r.offset, r.body) for r in rows] == [(5, bodies(6)[5])]


def test_batch_read_of_an_offset_range_is_repeatable(
    broker: Broker, amqp_spark: SparkSession, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(12))
    starting, ending = json.dumps({stream_queue: 3}), json.dumps({stream_queue: 9})
    opts = stream_options(broker, stream_queue, startingOffsets=starting, endingOffsets=ending)
    reader = amqp_spark.read.format("amqp").options(**opts)

    first = sorted((r.offset, r.body) for r in reader.load().collect())
    second = sorted((r.offset, r.body) for r in reader.load().collect())

    assert first == second == [(i, bodies(12)[i]) for i in range(3, 9)]


def test_batch_read_without_offsets_reads_the_whole_stream(
    broker: Broker, amqp_spark: SparkSession, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(7))

    df = amqp_spark.read.format("amqp").options(**stream_options(broker, stream_queue)).load()

    assert sorted((r.offset, r.body) for r in df.collect()) == list(enumerate(bodies(7)))


def test_processing_time_query_over_two_streams_reads_only_new_messages_and_reports_ends(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    other = broker.new_stream_queue()
    broker.publish(stream_queue, bodies(4, "old"))
    broker.publish(other, bodies(2, "old"))
    got: list[Row] = []
    query = queries.start(
        stream_options(broker, f"{stream_queue},{other}"),  # startingOffsets: next
        queries.checkpoint(),
        lambda df, _: got.extend(df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    wait_until(lambda: query.lastProgress is not None, 90, "the query to start")
    broker.publish(stream_queue, bodies(3, "new"))
    broker.publish(other, bodies(5, "new"))
    ends = {stream_queue: 7, other: 7}

    def progress_shows_ends() -> bool:
        progress = query.lastProgress
        assert progress is not None
        source = progress["sources"][0]
        return as_dict(source["latestOffset"]) == {"kind": "stream", "queues": ends}

    wait_until(progress_shows_ends, 90, f"lastProgress to show the ends {ends}")
    wait_until(lambda: len(got) >= 8, 60, "8 rows")
    query.stop()

    assert sorted((r.queue, r.offset, r.body) for r in got) == sorted(
        [(stream_queue, 4 + i, body) for i, body in enumerate(bodies(3, "new"))]
        + [(other, 2 + i, body) for i, body in enumerate(bodies(5, "new"))]
    )


def test_broker_restart_mid_query_loses_and_repeats_nothing(
    queries: Queries, restartable_broker: RestartableBroker
) -> None:
    broker = restartable_broker.broker
    queue = broker.new_stream_queue()
    broker.publish(queue, bodies(20, "before"))
    got: list[tuple[int, bytes]] = []
    query = queries.start(
        stream_options(broker, queue, startingOffsets="first", maxMessagesPerTrigger="5"),
        queries.checkpoint(),
        lambda df, _: got.extend((r.offset, r.body) for r in df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    wait_until(lambda: len(got) >= 5, 90, "the first batch")

    restartable_broker.restart()
    broker.publish(queue, bodies(20, "after"))
    wait_until(lambda: len(got) >= 40, 120, "every message after the restart")
    time.sleep(1)  # a duplicate would arrive in a later batch
    assert query.isActive
    query.stop()

    assert sorted(got) == list(enumerate(bodies(20, "before") + bodies(20, "after")))
