"""One AvailableNow run of the source at fixed options on the bundled broker, for comparing
two trees (issue 19's before/after): ``python benchmarks/source_one_run.py [--count N]
[--prefetch P]`` prints one JSON line (rows/s, CPU-s per million rows per process).

It imports only what every tree since the client and codec work has (``amqp_spark.client``,
``amqp_spark.datasource``, ``benchmarks.bench_broker.bundled_broker``,
``tests.support.spark``), so it runs unchanged with the interpreter of another checkout: run it
with that checkout's interpreter from that checkout, and the broker, the source, Spark's
Python workers (``PYSPARK_PYTHON`` is this interpreter) are that tree's; the JSON says where
the workers imported ``amqp_spark`` from. The CPU sampler is loaded from this file's folder,
so the same one measures both trees. Alternate the trees run by run (the machine is shared).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path.cwd()))  # the checkout run from, not this file's

from amqp_spark.client import connect  # noqa: E402
from amqp_spark.datasource import AMQPDataSource  # noqa: E402
from benchmarks.bench_broker import bundled_broker  # noqa: E402
from tests.support.spark import local_session  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "process_cpu", Path(__file__).with_name("process_cpu.py")
)
assert _spec is not None and _spec.loader is not None
process_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(process_cpu)

QUEUE = "bench-source"
BODY = bytes(range(100))


def _fill(url: str, count: int) -> None:
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(QUEUE)
        ch.queue_purge(QUEUE)
        ch.confirm_select()
        for first in range(0, count, 1000):
            ch.basic_publish_batch("", [(QUEUE, BODY, None)] * min(1000, count - first))
        ch.wait_for_confirms(timeout=600)


def _run(spark: Any, url: str, count: int, scratch: Path, prefetch: int) -> float:
    df = (
        spark.readStream.format("amqp").options(uri=url, queue=QUEUE, prefetch=str(prefetch)).load()
    )
    start = time.perf_counter()
    query = (
        df.writeStream.format("noop")
        .option("checkpointLocation", str(scratch / f"ck-{time.monotonic_ns()}"))
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(1800):
        query.stop()
        raise TimeoutError("the AvailableNow run did not end within 30 minutes")
    elapsed = time.perf_counter() - start
    read = sum(p["numInputRows"] for p in query.recentProgress)
    if read != count:
        raise AssertionError(f"the source read {read} rows of a backlog of {count}")
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--prefetch", type=int, default=131070)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="source-one-run-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            workers_import = (
                spark.sparkContext.parallelize([0], 1)
                .map(lambda _: __import__("amqp_spark").__file__)
                .collect()[0]
            )
            with bundled_broker() as (host, port):
                url = f"amqp://guest:guest@{host}:{port}/%2F"
                _fill(url, 1000)
                _run(spark, url, 1000, Path(scratch), args.prefetch)  # warm-up
                _fill(url, args.count)
                load = Path("/proc/loadavg").read_text().split()[0]
                with process_cpu.ProcessCPU() as cpu:
                    rate = _run(spark, url, args.count, Path(scratch), args.prefetch)
                per_million = {k: v * 1e6 / args.count for k, v in cpu.seconds.items()}
        finally:
            spark.stop()
    print(
        json.dumps(
            {
                "tree": str(Path.cwd()),
                "workers_import": workers_import,
                "rows_per_s": round(rate),
                "cpu_s_per_million": {k: round(v, 1) for k, v in per_million.items()},
                "load": f"{load}-{Path('/proc/loadavg').read_text().split()[0]}",
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
