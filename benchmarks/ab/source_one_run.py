"""One AvailableNow run of the source at fixed options on the bundled broker, for comparing
two trees (issue 19's before/after): ``python benchmarks/ab/source_one_run.py [--count N]``
prints one JSON line (rows/s, CPU-s per million rows per process, and Spark's phases summed
over the run's micro-batches, from the query the tree's harness started).

The run is the tree's own ``bench_source`` harness (its ``_fill`` and ``_source_rate``, the
same in both trees, ``prefetch`` 131070), its ``bundled_broker`` and ``testbed.spark``:
run it with another checkout's interpreter from that checkout, and the broker, the source,
Spark's Python workers (``PYSPARK_PYTHON`` is this interpreter) are that tree's; the JSON says where
the workers imported ``amqp_spark`` from. The CPU sampler is loaded from this file's folder,
so the same one measures both trees. Alternate the trees run by run (the machine is shared).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path.cwd()))  # the checkout run from, not this file's

from pyspark.sql.streaming.readwriter import DataStreamWriter  # noqa: E402

from amqp_spark.datasource import AMQPDataSource  # noqa: E402
from amqp_spark_demo.local_spark import local_session  # noqa: E402
from benchmarks.bench_broker import bundled_broker  # noqa: E402
from benchmarks.bench_source import SOURCE_PREFETCH, _fill, _source_rate  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "process_cpu", Path(__file__).parents[1] / "process_cpu.py"
)
assert _spec is not None and _spec.loader is not None
process_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(process_cpu)


#: The queries started in this process (``_source_rate`` keeps its own to itself).
_started: list[Any] = []
_start = DataStreamWriter.start


def _keep_query(self: Any, *args: Any, **kwargs: Any) -> Any:
    query = _start(self, *args, **kwargs)
    _started.append(query)
    return query


DataStreamWriter.start = _keep_query  # type: ignore[method-assign]


def durations(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds per phase of Spark's micro-batches (``durationMs``), summed over them."""
    seconds: dict[str, float] = {}
    for batch in progress:
        for phase, ms in batch["durationMs"].items():
            seconds[phase] = seconds.get(phase, 0.0) + ms / 1000
    return {phase: round(value, 2) for phase, value in seconds.items()}


def _run(spark: Any, url: str, count: int, scratch: Path) -> float:
    """The tree's own ``_source_rate`` at ``prefetch`` ``SOURCE_PREFETCH``."""
    return _source_rate(spark, url, count, scratch, prefetch=str(SOURCE_PREFETCH))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="source-one-run-") as scratch:
        spark = local_session("amqp-spark-source-ab", Path(scratch))
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
                _run(spark, url, 1000, Path(scratch))  # warm-up
                _fill(url, args.count)
                load = Path("/proc/loadavg").read_text().split()[0]
                with process_cpu.ProcessCPU() as cpu:
                    rate = _run(spark, url, args.count, Path(scratch))
                progress = _started[-1].recentProgress
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
                "batches": len(progress),
                "phases_s": durations(progress),
                "load": f"{load}-{Path('/proc/loadavg').read_text().split()[0]}",
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
