"""Scale-out of the source over a super stream: the same messages in 1 partition and in 3.

On each broker, two super streams are made over AMQP 0-9-1 as ``rabbitmq-streams
add_super_stream --partitions N`` makes them, with N = 1 and N = 3, and the same messages
(100-byte bodies; 300,000, 60,000 with ``--quick``) are published to both, message ``i`` to
partition ``i % N``. Each is then read whole by a Trigger.AvailableNow query with
``superStream`` (partitions found by naming) into the ``noop`` sink, on a local[2] session
started beforehand and warmed up by one untimed read of each; rows/s over the whole run, from
``start()`` to its end. ``rowsPerPartition`` is the message count, so a partition is read by
one Spark task: 1 task for the single partition, 3 for three (by default a stream of more
than 100,000 rows is also cut into ranges read in parallel, which is the same scale-out
within one partition). The two layouts alternate over rounds (two, one with ``--quick``)
and each keeps its best (the machine is shared: load only slows a run down). Every run's CPU
per process (broker, JVM, the source's runner, the executors) is read from ``/proc``.

Brokers: the bundled one in its own process (``python -m broker --in-memory``) and RabbitMQ 4
(``AMQP_SPARK_RABBITMQ_URL`` or a private node, testbed/rabbitmq.py).

``python -m benchmarks.bench_super_stream [--count N] [--rounds R] [--broker bundled|rabbitmq4]``
prints every run with the load average, then a Markdown table: rows/s of each layout, the
ratio 3 partitions / 1, and CPU seconds per process of each best run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from benchmarks.bench_broker import bundled_broker
from benchmarks.bench_source import available_now_rate
from benchmarks.common import Row, row
from benchmarks.process_cpu import KINDS, ProcessCPU, rabbitmq_node_pid
from testbed.rabbitmq import rabbitmq
from testbed.spark import local_session

BODY = bytes(range(100))
LAYOUTS = (1, 3)
BROKERS = ("bundled", "rabbitmq4")


@dataclass
class Run:
    partitions: int
    rows_per_s: float
    cpu: dict[str, float]
    load: tuple[float, float]  #: the 1-minute load average at the start and the end


def make_super_stream(url: str, name: str, partitions: int, count: int) -> None:
    """Super stream ``name`` of ``partitions`` partitions (as add_super_stream makes it)
    holding ``count`` messages, message ``i`` in partition ``i % partitions``."""
    with connect(url) as conn, conn.channel() as ch:
        ch.exchange_declare(name, "direct", durable=True, arguments={"x-super-stream": True})
        for index in range(partitions):
            stream = f"{name}-{index}"
            ch.queue_delete(stream)
            ch.queue_declare(
                stream,
                durable=True,
                arguments={"x-queue-type": "stream", "x-queue-leader-locator": "balanced"},
            )
            ch.queue_bind(stream, name, str(index), arguments={"x-stream-partition-order": index})
        ch.confirm_select()
        keys = [str(i % partitions) for i in range(1000)]
        for first in range(0, count, 1000):
            size = min(1000, count - first)
            for key in keys[:size]:
                ch.basic_publish(name, key, BODY)
            ch.wait_for_confirms(timeout=600)


def remove_super_stream(url: str, name: str, partitions: int) -> None:
    with connect(url) as conn, conn.channel() as ch:
        for index in range(partitions):
            ch.queue_delete(f"{name}-{index}")
        ch.exchange_delete(name)


def read_whole(spark: Any, url: str, name: str, count: int, scratch: Path) -> float:
    """rows/s of an AvailableNow read of the whole super stream into ``noop``."""
    df = (
        spark.readStream.format("amqp")
        .options(uri=url, superStream=name, startingOffsets="first", rowsPerPartition=str(count))
        .load()
    )
    return available_now_rate(df, count, scratch)


def measure(
    spark: Any, url: str, broker_pid: int | None, count: int, rounds: int, scratch: Path
) -> dict[int, list[Run]]:
    names = {n: f"bench-super-{n}-{time.monotonic_ns()}" for n in LAYOUTS}
    for n, name in names.items():
        make_super_stream(url, name, n, count)
    try:
        for n in LAYOUTS:  # warm-up, untimed: starts as many Python workers as tasks run
            read_whole(spark, url, names[n], count, scratch)
        runs: dict[int, list[Run]] = {n: [] for n in LAYOUTS}
        for round_ in range(rounds):
            order = LAYOUTS if round_ % 2 == 0 else LAYOUTS[::-1]
            for n in order:
                load = os.getloadavg()[0]
                with ProcessCPU(broker_pid) as cpu:
                    rate = read_whole(spark, url, names[n], count, scratch)
                run = Run(n, rate, cpu.seconds, (load, os.getloadavg()[0]))
                print(
                    f"  {n} partition(s): {rate:,.0f} rows/s, load {run.load[0]:.1f}->"
                    f"{run.load[1]:.1f}, CPU s "
                    + ", ".join(f"{k} {run.cpu[k]:.1f}" for k in KINDS),
                    flush=True,
                )
                runs[n].append(run)
        return runs
    finally:
        for n, name in names.items():
            remove_super_stream(url, name, n)


@contextlib.contextmanager
def broker_of(kind: str) -> Iterator[tuple[str, int | None]]:
    """(AMQP URL, broker pid for the CPU figures) of ``kind``."""
    if kind == "bundled":
        with bundled_broker() as (host, port):
            yield f"amqp://guest:guest@{host}:{port}/%2F", None
        return
    with rabbitmq(4) as url:
        yield url, rabbitmq_node_pid(urlsplit(url).port or 5672)


def best(runs: list[Run]) -> Run:
    return max(runs, key=lambda r: r.rows_per_s)


def measure_all(
    count: int, rounds: int, brokers: tuple[str, ...]
) -> dict[str, dict[int, list[Run]]]:
    results: dict[str, dict[int, list[Run]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-super-stream-") as d:
        spark = local_session(Path(d))
        spark.dataSource.register(AMQPDataSource)
        try:
            for kind in brokers:
                print(f"{kind}: {count:,} messages, {rounds} round(s)", flush=True)
                with broker_of(kind) as (url, pid):
                    results[kind] = measure(spark, url, pid, count, rounds, Path(d))
        finally:
            spark.stop()
    return results


def cpu_ceiling(run: Run, rows: int, cores: int = 2) -> float:
    """The fastest the run's read can be on ``cores`` cores, in rows/s: all the CPU its
    processes spent (broker, JVM, runner, executors; not this idle driver) spread over
    every core."""
    spent = sum(seconds for kind, seconds in run.cpu.items() if kind != "driver")
    return rows / (spent / cores)


def table(results: dict[str, dict[int, list[Run]]], rows: int) -> str:
    lines = [
        "| broker | 1 partition, rows/s | 3 partitions, rows/s | ratio 3/1 | CPU-bound "
        "ceiling on 2 cores, rows/s (1 / 3) | CPU s of the best runs (1 / 3): "
        + ", ".join(KINDS)
        + " |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind, runs in results.items():
        one, three = best(runs[1]), best(runs[3])
        cpu = ", ".join(f"{one.cpu[k]:.1f} / {three.cpu[k]:.1f}" for k in KINDS)
        lines.append(
            f"| {kind} | {one.rows_per_s:,.0f} | {three.rows_per_s:,.0f} | "
            f"{three.rows_per_s / one.rows_per_s:.2f} | {cpu_ceiling(one, rows):,.0f} / "
            f"{cpu_ceiling(three, rows):,.0f} | {cpu} |"
        )
    return "\n".join(lines)


def run(quick: bool) -> list[Row]:
    results = measure_all(60_000 if quick else 300_000, 1 if quick else 2, BROKERS)
    return [
        row(
            f"super stream read, 3 partitions vs 1 ({kind})",
            "rows/s",
            best(runs[3]).rows_per_s,
            best(runs[1]).rows_per_s,
            "1 partition",
        )
        for kind, runs in results.items()
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_super_stream")
    p.add_argument("--count", type=int, default=300_000, help="messages in each super stream")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--broker", action="append", choices=BROKERS, help="only these (repeatable)")
    args = p.parse_args(argv)
    results = measure_all(args.count, args.rounds, tuple(args.broker or BROKERS))
    print(table(results, args.count))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
