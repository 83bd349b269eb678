"""A streaming write into a stream whose only task fails once near its end and is retried by
Spark, run in a child process: Spark retries a failed task only when the master says so
(``local[2,2]``), and the suite's session (``local[2]``, one SparkContext a process) does not.

The rows' bodies are made by a Python UDF that names the task attempt that made them; on
the first attempt it waits, at a row near the end, until the stream holds some of the
task's rows (the writer's publishing sequence for the task's producer name is above 0), then
raises: so the first attempt certainly wrote part of the partition before it failed.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from amqp_protocol.generated import stream as c
from amqp_spark.client.stream import StreamClient, StreamEndpoint
from amqp_spark.sink.stream_ids import producer_name

#: Seconds the child may take: a JVM's start and a query on a loaded 2-core machine.
CALL_TIMEOUT = 300
#: Seconds the failing attempt waits for its first rows to be in the stream.
WAIT_FOR_ROWS = 30.0
#: What makes a body long enough that the UDF's output fills the Python worker's 64 KiB
#: write buffer many times over: so the writer receives rows before the UDF stops.
PADDING = "x" * 200


def run(url: str, stream_uri: str, stream: str, rows: int, fail_at: int, scratch: Path) -> str:
    """Write ``rows`` rows into ``stream`` in a child process (see the module docstring);
    returns the query's id."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as child:
        future = child.submit(_write, url, stream_uri, stream, rows, fail_at, str(scratch))
        return future.result(timeout=CALL_TIMEOUT)


def _write(url: str, stream_uri: str, stream: str, rows: int, fail_at: int, scratch: str) -> str:
    from pyspark import TaskContext
    from pyspark.sql import functions as F

    from amqp_spark.datasource import register
    from testbed.spark import local_session

    spark = local_session(Path(scratch) / "spark", task_attempts=2)
    # Record batches of 500 rows: the writer publishes while the UDF goes on.
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    register(spark)
    source = Path(scratch) / "in"
    source.mkdir()
    (source / "a.json").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(rows)))

    def body(n: int) -> str:
        task = TaskContext.get()
        assert task is not None
        if n == fail_at and task.attemptNumber() == 0:
            query = task.getLocalProperty("sql.streaming.queryId") or ""
            _wait_for_rows(stream_uri, stream, producer_name(query, task.partitionId()))
            raise RuntimeError(f"the first attempt fails at row {n}")
        return f"row-{n}:attempt-{task.attemptNumber()}:{PADDING}"

    query = (
        spark.readStream.schema("n long")
        .json(str(source))
        .select(F.udf(body, "string")("n").alias("body"))
        .writeStream.format("amqp")
        .option("uri", url)
        .option("stream", stream)
        .option("streamUri", stream_uri)
        .option("checkpointLocation", str(Path(scratch) / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        if not query.awaitTermination(CALL_TIMEOUT - 60):
            raise TimeoutError("the query did not end in time")
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        return str(query.id)
    finally:
        query.stop()
        spark.stop()


def _wait_for_rows(stream_uri: str, stream: str, name: str) -> None:
    """Until ``stream`` holds a row of producer ``name``, at most ``WAIT_FOR_ROWS`` s."""
    deadline = time.monotonic() + WAIT_FOR_ROWS
    with StreamClient(StreamEndpoint.parse(stream_uri)) as client:
        while time.monotonic() < deadline:
            answer = client.request(
                c.QueryPublisherSequence(client.next_correlation_id(), name, stream),
                c.QueryPublisherSequenceResponse,
                f"the publishing sequence of {name!r}",
            )
            if answer.sequence > 0:
                return
            time.sleep(0.2)
