"""The tests' Spark driver on the standalone cluster, in a child process of its own.

A Python process holds one SparkContext, and the pytest process of the Spark tests already
holds the suite's ``local[2]`` session (testbed/spark.py); so the driver application on
the cluster lives in a spawned child, and the tests call the functions below there through
``ClusterDriver``. They return plain Python data: the rows read, and how many tasks each
executor had run by then (the proof that the executors, not the driver, read and wrote).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from testbed.spark_cluster import cluster_session, executor_tasks

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")

#: Seconds a call into the child may take: the session's start (a JVM, two executors) or a
#: streaming query on a loaded 2-core machine.
CALL_TIMEOUT = 240

_session: SparkSession | None = None


def _spark() -> SparkSession:
    if _session is None:
        raise RuntimeError("the cluster driver has no session: start() first")
    return _session


def start(master_url: str, scratch: str, executors: int) -> dict[str, int]:
    """Start the child's session on the cluster (``format("amqp")`` registered by
    ``pip install``, as for a spark-submit job); its executors and their task counts."""
    global _session
    _session = cluster_session(master_url, Path(scratch), executors, timeout=CALL_TIMEOUT - 30)
    return executor_tasks(_session)


def tasks() -> dict[str, int]:
    """Tasks run so far, per executor."""
    return executor_tasks(_spark())


def read_available_now(options: dict[str, str], checkpoint: str) -> list[tuple[bytes, int | None]]:
    """(body, offset) of every row one AvailableNow run of ``readStream.format("amqp")``
    gave a ``foreachBatch`` sink (which runs here, in the driver)."""
    rows: list[tuple[bytes, int | None]] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        rows.extend((bytes(r.body), r.offset) for r in df.select("body", "offset").collect())

    df = _spark().readStream.format("amqp").options(**options).load()
    query = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(CALL_TIMEOUT - 30):
        query.stop()
        raise TimeoutError(f"the AvailableNow run did not end within {CALL_TIMEOUT - 30} s")
    if query.exception() is not None:
        raise RuntimeError(f"the query failed: {query.exception()}")
    return rows


def write_batch(rows: list[tuple[Any, ...]], ddl: str, options: dict[str, str]) -> None:
    """``df.write.format("amqp")`` of ``rows`` (schema ``ddl``), one task per executor."""
    df = _spark().createDataFrame(rows, ddl).repartition(len(executor_tasks(_spark())))
    df.write.format("amqp").options(**options).mode("append").save()


def stop() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None


class ClusterDriver:
    """The parent's handle on the child driver: ``call(f, ...)`` runs ``f(...)`` there."""

    def __init__(self, master_url: str, scratch: Path, executors: int) -> None:
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        try:
            self.executors = self.call(start, master_url, str(scratch), executors)
        except BaseException:
            self.close()
            raise

    def call(self, function: Callable[..., T], *args: Any) -> T:
        return self._pool.submit(function, *args).result(timeout=CALL_TIMEOUT)

    def close(self) -> None:
        try:
            self._pool.submit(stop).result(timeout=60)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
