"""What the source costs per process on a standalone Spark cluster, for docs/scaling.md.

A master and ``--executors`` workers of one core each (testbed/spark_cluster.py, from
the installed PySpark, on 127.0.0.1), this process as the driver with one executor per
worker. Per broker (the bundled one in its own process, RabbitMQ 4) and per queue type, a
backlog of ``--count`` 100-byte messages (default 200,000) is drained by one Trigger.AvailableNow
query into the ``noop`` sink, at the source's defaults (streams: ``startingOffsets=first``
and ``rowsPerPartition`` a quarter of the backlog per executor, so every executor reads);
a run over a quarter of the backlog warms each of them up untimed.

Each run's CPU-seconds per process are read from ``/proc`` (benchmarks/process_cpu.py) and
grouped by where the work runs: the broker; on the driver this Python process, its JVM, the
query's source runner (one long-lived Python process per query) and its other Python
workers (planning); on the executors their JVMs and their Python workers (``read()``); the
master and worker daemons. CPU-seconds hold on a shared machine where rates do not. The
output is one Markdown table of CPU-seconds per million rows, and the ceilings they imply
(``projection``): a process that can use one core reads at most 1e6 / (its CPU-s per 1M rows)
rows per second.

``python -m benchmarks.bench_scaling [--count N] [--executors E] [--broker bundled|rabbitmq4]``
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.bench_source import BROKERS, _fill, _load, _source_rate
from benchmarks.common import Row, row
from benchmarks.process_cpu import ProcessCPU, command_line, parent, rabbitmq_node_pid
from testbed.spark_cluster import SparkCluster, cluster_session

#: The process groups, in the table's order.
KINDS = (
    "broker",
    "driver",
    "driver JVM",
    "runner",
    "driver Python",
    "executor JVMs",
    "executor Python",
    "cluster daemons",
)
EXECUTOR_JVM = "CoarseGrainedExecutorBackend"
QUEUE_TYPES = ("classic", "stream")
#: Brokers that are one Python process, so one core at most (``bench_source.BROKERS``' names).
ONE_PROCESS_BROKERS = ("bundled broker",)
#: Executors of the projections in docs/scaling.md.
PROJECTED = (4, 16, 64)


class ClusterCPU(ProcessCPU):
    """ProcessCPU with the driver's and the executors' processes told apart."""

    kinds = KINDS

    def kind_of(self, pid: int) -> str:
        kind = super().kind_of(pid)
        if kind == "jvm":
            line = command_line(pid)
            if EXECUTOR_JVM in line:
                return "executor JVMs"
            if "deploy.master.Master" in line or "deploy.worker.Worker" in line:
                return "cluster daemons"
            return "driver JVM"
        if kind == "executors":  # a Python worker: whose?
            return "executor Python" if self._under_executor(pid) else "driver Python"
        return kind

    @staticmethod
    def _under_executor(pid: int) -> bool:
        ancestor = parent(pid)
        while ancestor not in (None, 0, 1):
            if EXECUTOR_JVM in command_line(ancestor):
                return True
            ancestor = parent(ancestor)
        return False


def _options(queue_type: str, count: int, executors: int) -> dict[str, str]:
    if queue_type == "classic":
        return {}
    per_partition = max(1, count // (4 * executors))
    return {
        "queueType": "stream",
        "startingOffsets": "first",
        "rowsPerPartition": str(per_partition),
    }


def _measure_broker(
    spark: Any, url: str, count: int, executors: int, scratch: Path, label: str
) -> dict[str, dict[str, float]]:
    """CPU-s per million rows per kind, per queue type, on one broker."""
    port = urlsplit(url).port
    broker_pid = rabbitmq_node_pid(port) if port is not None else None
    found: dict[str, dict[str, float]] = {}
    for queue_type in QUEUE_TYPES:
        options = _options(queue_type, count, executors)
        stream = queue_type == "stream"
        # Untimed: the runner's and the workers' first start, the JVMs' compilation (a
        # tenth of the backlog left the executors' JVMs compiling through the first classic
        # run: 35 CPU-s per 1M rows against 9 once warm).
        _fill(url, count // 4, stream=stream)
        _source_rate(spark, url, count // 4, scratch, **options)
        _fill(url, count, stream=stream)
        load = _load()
        with ClusterCPU(broker_pid) as cpu:
            rate = _source_rate(spark, url, count, scratch, **options)
        found[queue_type] = {k: v * 1e6 / count for k, v in cpu.seconds.items()}
        found[queue_type]["rows/s"] = rate
        print(
            f"{label}, {queue_type} queue: {rate:,.0f} rows/s, load {load}-{_load()}; "
            "CPU-s per 1M rows: " + ", ".join(f"{k} {found[queue_type][k]:.1f}" for k in KINDS),
            file=sys.stderr,
            flush=True,
        )
    return found


@contextlib.contextmanager
def _driver(executors: int) -> Iterator[Any]:
    with (
        tempfile.TemporaryDirectory(prefix="bench-scaling-") as scratch,
        SparkCluster(workers=executors, cores=1) as cluster,
    ):
        spark = cluster_session(cluster.master_url, Path(scratch), executors)
        try:
            yield spark, Path(scratch)
        finally:
            spark.stop()


def measure(
    count: int, executors: int, only: tuple[str, ...]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per broker and queue type: CPU-s per million rows per kind, and ``rows/s``."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    with _driver(executors) as (spark, scratch):
        for name in only:
            broker, start_broker = BROKERS[name]
            with start_broker() as url:
                found[broker] = _measure_broker(spark, url, count, executors, scratch, broker)
    return found


def markdown(found: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| broker | queue | rows/s (2 shared cores) | " + " | ".join(KINDS) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in KINDS) + " |",
    ]
    for broker, per_type in found.items():
        for queue_type, cpu in per_type.items():
            lines.append(
                f"| {broker} | {queue_type} | {cpu['rows/s']:,.0f} | "
                + " | ".join(f"{cpu[k]:.1f}" for k in KINDS)
                + " |"
            )
    return "\n".join(lines)


def _ceiling(cpu: dict[str, float], kind: str, cores: float = 1.0) -> float:
    """Rows/s a process group of ``kind`` allows with ``cores`` cores."""
    return cores * 1e6 / cpu[kind] if cpu[kind] > 0 else float("inf")


def projection(found: dict[str, dict[str, dict[str, float]]]) -> str:
    """Per broker and queue type, one query's ceiling at PROJECTED executors: the least of
    what the executors allow (one core each, JVM and Python workers together) and what its
    driver side allows (the runner, one process, and the driver JVM, each counted as one
    core; the bundled broker too), with the bound named, and the broker's cores that rate
    takes."""
    lines = [
        "| broker | queue | runner allows | driver JVM allows | "
        + " | ".join(f"{n} executors" for n in PROJECTED)
        + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in PROJECTED) + " |",
    ]
    for broker, per_type in found.items():
        for queue_type, cpu in per_type.items():
            executor = cpu["executor JVMs"] + cpu["executor Python"]
            cells = []
            for n in PROJECTED:
                bounds = {
                    "executors": n * 1e6 / executor,
                    "runner": _ceiling(cpu, "runner"),
                    "driver JVM": _ceiling(cpu, "driver JVM"),
                }
                if broker in ONE_PROCESS_BROKERS:
                    bounds["broker"] = _ceiling(cpu, "broker")
                bound = min(bounds, key=lambda name: bounds[name])
                rate = bounds[bound]
                cells.append(
                    f"{rate:,.0f} ({bound}); broker {rate * cpu['broker'] / 1e6:.1f} cores"
                )
            lines.append(
                f"| {broker} | {queue_type} | {_ceiling(cpu, 'runner'):,.0f} | "
                f"{_ceiling(cpu, 'driver JVM'):,.0f} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def run(quick: bool) -> list[Row]:
    """``benchmarks.run``'s rows: CPU-s per million rows per process group, per broker and
    queue type, 200,000 messages (50,000 with ``quick``) on 2 executors."""
    found = measure(50_000 if quick else 200_000, 2, ("bundled", "rabbitmq4"))
    return [
        row(
            f"2-executor cluster, {broker}, {queue_type} queue: CPU per 1M rows, {kind}",
            "CPU-s",
            cpu[kind],
        )
        for broker, per_type in found.items()
        for queue_type, cpu in per_type.items()
        for kind in KINDS
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scaling")
    parser.add_argument("--count", type=int, default=200_000, help="messages in each backlog")
    parser.add_argument("--executors", type=int, default=2, help="workers, one executor each")
    parser.add_argument(
        "--broker",
        action="append",
        choices=["bundled", "rabbitmq4"],
        help="measure only this broker (repeatable; default: both)",
    )
    args = parser.parse_args()
    found = measure(args.count, args.executors, tuple(args.broker or ("bundled", "rabbitmq4")))
    print(f"\nCPU-s per million rows per process ({args.count:,} x 100 B, AvailableNow):\n")
    print(markdown(found))
    print("\nOne query's ceiling in rows/s (1e6 / CPU-s per 1M rows per core), by executors:\n")
    print(projection(found))


if __name__ == "__main__":
    main()
