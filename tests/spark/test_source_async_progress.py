"""Spark's asynchronous progress tracking (the writeStream option
``asyncProgressTrackingEnabled``: offset and commit logs written in the background, at most
every ``asyncProgressTrackingCheckpointIntervalMs``) with the ``amqp`` source. Spark allows
it only with processing-time triggers and a few sinks; the foreach sink is one, so the rows
go to files here.

Batches still run one after the other and Spark asks the source for the next batch
(``latestOffset``, where the source acks classic queues up to its start) only once the sink
has written the previous one, so acks never precede the sink. What is lost is the
checkpoint's currency: a query stopped between two checkpoint writes restarts from the last
one, so batches written after it come again. Classic queues: everything arrives at least
once and everything is acked. Stream queues: no gap; the replayed batches are duplicates.
Both brokers.

Spark 4.3 may leave a stopped async run registered as active (see ``stop_run``);
the tests unregister it before restarting from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql.streaming import StreamingQuery

from testbed.waiting import wait_until
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.classic_acks import nothing_waiting
from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import bodies, classic_options, stream_options

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
]

FIRST, SECOND, PER_TRIGGER = 200, 50, 10


class FileSink:
    """A foreach sink appending ``offset body`` lines to one file per Python worker process
    (the function runs on the executors, so the rows come back through the files)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.directory = directory

    def writer(self) -> Callable[[Row], None]:
        directory = str(self.directory)

        def write(row: Row) -> None:
            import os

            with open(os.path.join(directory, f"{os.getpid()}.rows"), "a") as f:
                f.write(f"{row.offset} {row.body.decode()}\n")

        return write

    def rows(self) -> list[tuple[int | None, bytes]]:
        got = []
        for path in self.directory.glob("*.rows"):
            for line in path.read_text().splitlines():
                offset, body = line.split(" ")
                got.append((None if offset == "None" else int(offset), body.encode()))
        return got

    def bodies(self) -> set[bytes]:
        return {body for _, body in self.rows()}


def start_async(
    spark: SparkSession, options: dict[str, str], checkpoint: str, sink: FileSink
) -> StreamingQuery:
    df = spark.readStream.format("amqp").options(**options).load()
    return (
        df.writeStream.foreach(sink.writer())
        .option("checkpointLocation", checkpoint)
        .option("asyncProgressTrackingEnabled", "true")
        .option("asyncProgressTrackingCheckpointIntervalMs", "1000")
        .trigger(processingTime="300 milliseconds")
        .start()
    )


def stop_run(spark: SparkSession, query: StreamingQuery) -> None:
    """Stop an async run and make sure it is no longer in ``spark.streams.active``.

    ``AsyncProgressTrackingMicroBatchExecution.cleanup`` commits to the source the offsets its
    background writer persisted since the last trigger, but ``StreamExecution.runStream`` calls
    it after ``stopSources``, which for a Python data source has closed the socket to the
    source runner. When such an offset is pending (14 of 24 stops in three runs here), the commit
    fails with ``ClosedChannelException``, which leaves the execution thread's ``finally``
    before ``StreamingQueryManager.notifyQueryTermination``: the run stays registered for the
    rest of the application (``isActive`` is False) and a restart from its checkpoint fails
    with ``CONCURRENT_QUERY``. This does the step Spark skipped, once the thread has ended.
    """
    query.stop()
    assert query.exception() is None
    execution = query._jsq.streamingQuery()
    # stop() joins the execution thread: Spark has unregistered the run by now or never will.
    assert not execution.queryExecutionThread().isAlive(), "the run's thread outlived stop()"
    if any(q.id == query.id for q in spark.streams.active):
        spark.streams._jsqm.notifyQueryTermination(execution)


def read_in_two_runs(
    broker: Broker, queries: Queries, options: dict[str, str], sink: FileSink
) -> StreamingQuery:
    """Two async query runs on one checkpoint: the first stopped mid-backlog, the second
    started after more messages came, returned running once the sink has every message."""
    queue = options["queue"]
    checkpoint = queries.checkpoint()
    broker.publish(queue, bodies(FIRST, "first"))
    first = start_async(queries.spark, options, checkpoint, sink)
    queries.started.append(first)
    wait_until(lambda: len(sink.rows()) >= FIRST // 4, 90, "a quarter of the first messages")
    stop_run(queries.spark, first)

    broker.publish(queue, bodies(SECOND, "second"))
    second = start_async(queries.spark, options, checkpoint, sink)
    queries.started.append(second)
    everything = set(bodies(FIRST, "first") + bodies(SECOND, "second"))
    wait_until(lambda: everything <= sink.bodies(), 120, "every message in the second run")
    assert second.isActive, second.exception()
    return second


def test_classic_queue_with_async_progress_tracking_reads_everything_and_acks_it(
    broker: Broker, queries: Queries, tmp_path: Path
) -> None:
    queue = broker.new_queue()
    options = classic_options(broker, queue, maxMessagesPerTrigger=str(PER_TRIGGER))

    sink = FileSink(tmp_path / "sink")

    query = read_in_two_runs(broker, queries, options, sink)
    wait_until(lambda: nothing_waiting(query, queue), 60, "nothing ready or unacked")
    stop_run(queries.spark, query)

    assert sink.bodies() == set(bodies(FIRST, "first") + bodies(SECOND, "second"))
    assert ready_once_unconsumed(broker, queue) == 0


def test_stream_queue_with_async_progress_tracking_has_no_gap(
    broker: Broker, queries: Queries, stream_queue: str, tmp_path: Path
) -> None:
    options = stream_options(
        broker, stream_queue, startingOffsets="first", maxMessagesPerTrigger=str(PER_TRIGGER)
    )

    sink = FileSink(tmp_path / "sink")

    stop_run(queries.spark, read_in_two_runs(broker, queries, options, sink))

    assert set(sink.rows()) == set(enumerate(bodies(FIRST, "first") + bodies(SECOND, "second")))
