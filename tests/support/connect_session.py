"""A Spark Connect session (``SparkSession.builder.remote("local[2]")``) for the tests, in a
process of its own.

``remote("local[...]")`` starts a classic SparkContext in the calling process that hosts the
Connect server, and refuses to when that process already has one (SESSION_OR_CONTEXT_EXISTS):
the suite's classic session (testbed/spark.py) and a Connect session cannot share a
pytest process, in either order. So the Connect session lives in a spawned child (a JVM of
its own, started once a run) and the tests call the module-level functions below there
through ``ConnectSession``; what they return is plain Python data.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

T = TypeVar("T")

#: Seconds a call into the child may take: a JVM start plus a streaming query on a loaded
#: 2-core machine.
CALL_TIMEOUT = 240

_session: SparkSession | None = None


def _connect_session(scratch: str) -> SparkSession:
    """The child's Connect session, started at its first use, with ``amqp`` registered
    explicitly as a Databricks notebook on serverless does."""
    global _session
    if _session is None:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        # Static settings of the local server go in through PySpark's own channel for the
        # server's configuration; given to the builder they would also be tried on the
        # Connect session, which refuses them with a warning each.
        os.environ["PYSPARK_REMOTE_INIT_CONF_LEN"] = "1"
        os.environ["PYSPARK_REMOTE_INIT_CONF_0"] = json.dumps(
            {
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                # The Connect server listens on loopback only (its default is every address);
                # its port stays PySpark's 15002, which the client side of remote("local")
                # always dials outside Spark's own test mode.
                "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.local.dir": f"{scratch}/local",
                "spark.driver.extraJavaOptions": f"-Dderby.system.home={scratch}/derby",
            }
        )
        from pyspark.sql import SparkSession

        from amqp_spark import register

        session = (
            SparkSession.builder.remote("local[2]")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        register(session)
        _session = session
    return _session


def is_connect_session(scratch: str) -> bool:
    """Whether the child's session is a Spark Connect client (not a classic session)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

    return isinstance(_connect_session(scratch), ConnectSparkSession)


def read_available_now(
    scratch: str, options: dict[str, str], checkpoint: str, output: str
) -> list[dict[str, Any]]:
    """One AvailableNow run of ``readStream.format("amqp")`` into a Parquet sink at
    ``output``, and every row that sink holds after it (what this run and the earlier runs
    with the same checkpoint wrote). Parquet rather than the memory sink (which refuses a
    restart from a checkpoint) or ``foreachBatch`` (which runs in the server's Python)."""
    spark = _connect_session(scratch)
    df = spark.readStream.format("amqp").options(**options).load()
    run_available_now(
        lambda: (
            df.writeStream.format("parquet")
            .option("path", output)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
    )
    return [row.asDict() for row in spark.read.parquet(output).collect()]


def write_batch(
    scratch: str, rows: list[tuple[Any, ...]], ddl: str, options: dict[str, str]
) -> None:
    """``df.write.format("amqp")`` of ``rows`` (schema ``ddl``)."""
    spark = _connect_session(scratch)
    spark.createDataFrame(rows, ddl).write.format("amqp").options(**options).mode("append").save()


def stream_through(
    scratch: str, source: dict[str, str], sink: dict[str, str], checkpoint: str
) -> None:
    """One AvailableNow run of a query reading ``format("amqp")`` and writing
    ``format("amqp")``: the streaming source and the streaming sink together."""
    spark = _connect_session(scratch)
    df = spark.readStream.format("amqp").options(**source).load().select("body", "routing_key")
    run_available_now(
        lambda: (
            df.writeStream.format("amqp")
            .options(**sink)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
    )


#: Spark waits a hard-coded 10 s for a Python worker it started to connect back (JVM
#: PythonWorkerFactory); on a loaded 2-core machine the streaming source's runner sometimes
#: takes longer to import pyspark and pyarrow, and the query fails before it read anything.
WORKER_START_FAILURE = "Python worker failed to connect back"


def run_available_now(start: Callable[[], Any]) -> None:
    """Start a query with ``start`` and wait for its AvailableNow run to end; a run that
    failed only because a Python worker was slow to start (nothing was read: the runner
    never came up) is started once more."""
    for attempt in (1, 2):
        query = start()
        if not query.awaitTermination(CALL_TIMEOUT - 30):
            query.stop()
            raise TimeoutError(f"the AvailableNow run did not end within {CALL_TIMEOUT - 30} s")
        error = query.exception()
        if error is None:
            return
        if attempt == 2 or WORKER_START_FAILURE not in str(error):
            raise RuntimeError(f"the query failed: {error}")


def stop() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None


#: The local Connect server's port is PySpark's fixed 15002 (see ``_connect_session``), one
#: per machine: a second Connect session at the same time (CI runs the Connect tests on the
#: newest and the oldest PySpark in two jobs at once) fails with a BindException. Every
#: session holds this lock while its server may run.
PORT_LOCK = Path(tempfile.gettempdir()) / "amqp-spark-connect-15002.lock"
#: How long a session waits for another to finish (the Connect tests take a few minutes).
PORT_LOCK_WAIT = 1200


def _hold_port_lock() -> IO[bytes]:
    """The port's lock, taken: waits (bounded) while another session holds it."""
    handle = PORT_LOCK.open("ab")
    deadline = time.monotonic() + PORT_LOCK_WAIT
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.close()
                raise TimeoutError(
                    f"another Spark Connect session held port 15002 ({PORT_LOCK}) for over "
                    f"{PORT_LOCK_WAIT} s"
                ) from None
            time.sleep(1)


class ConnectSession:
    """The parent's handle on the child: ``call(f, ...)`` runs ``f(scratch, ...)`` there."""

    def __init__(self, scratch: Path) -> None:
        self._scratch = str(scratch)
        self._port_lock = _hold_port_lock()
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def call(self, function: Callable[..., T], *args: Any) -> T:
        return self._pool.submit(function, self._scratch, *args).result(timeout=CALL_TIMEOUT)

    def close(self) -> None:
        try:
            self._pool.submit(stop).result(timeout=60)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._port_lock.close()  # releases the lock
