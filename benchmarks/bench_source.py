"""Source throughput: ``spark.readStream.format("amqp")`` draining a backlog, at its defaults.

A backlog of 1 million 100-byte messages (100 000 with ``--quick``) in one classic queue,
read by a Trigger.AvailableNow query into the ``noop`` sink; rows/s over the whole run, from
``start()`` to the end of the run (query start, planning, acks included), a local[2] session
started beforehand and warmed up by a run of 60,000 rows per broker. The headline is the
source at its default options (no ``prefetch``: the window grows to 131070 messages of
100 B on the bundled broker, batches of 65535, and to 40000 on RabbitMQ, batches of 20000);
the tuned figure follows (``prefetch`` 131070 given: two consumers of 65535 from the start),
and ``prefetch`` 40000 (RabbitMQ's default window, given from the start).

Beside it, on the same broker in the same run, each reading the same backlog refilled:

* the raw client: our client consuming the queue in this process (prefetch 65535, acking
  every 10 000 with ``multiple``), nothing else done with the messages — the ceiling, since
  the source consumes through this client;
* the trivial Python source (``benchmarks.python_source_floor``, no broker): Spark's own cost
  of a Python streaming source, which no design of the source can pass;
* the trivial Python source consuming the queue (``benchmarks.consuming_floor``): the same,
  while its reader consumes the backlog as the source does (our client's columns, the
  source's default window, batches of half of it, acks at commit) and throws it away: about
  what the source would read if all it does beyond consuming cost nothing, so that the gap to
  the trivial source splits in two, the broker's and the wire's, and the source's own;
* the hand-written alternative: a pika consumer (prefetch 65535) collecting 10 000
  deliveries at a time as tuples (body, routing_key, exchange, delivery_tag, redelivered),
  ``createDataFrame`` on them, a ``noop`` write, then an ack of the 10 000.

They alternate over rounds (two, one with ``--quick``), each round in another order, and each
keeps its best: the machine is shared, and load only ever slows a run down. Every run's CPU
per process (broker, JVM, the source's runner, the executors, this process) is read from
``/proc``; the rows give it per million rows for the best run. Three brokers, in this order:
the bundled broker in its own process (``python -m broker``), RabbitMQ 4 and RabbitMQ 3.10
(``AMQP_SPARK_RABBITMQ_URL`` / ``AMQP_SPARK_RABBITMQ3_URL`` or private nodes,
testbed/rabbitmq.py). ``python -m benchmarks.bench_source [--count N] [--rounds R]``
runs it alone (``--broker bundled|rabbitmq4|rabbitmq3``, repeatable: only those), prints
every run with the load average at its start and end and, for the source, where its time
went (Spark's phases), then the rows and one Markdown table of every contender's best with
its CPU per process.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from benchmarks.bench_broker import bundled_broker
from benchmarks.common import Row, row
from benchmarks.consuming_floor import ConsumingFloor
from benchmarks.process_cpu import KINDS, ProcessCPU, rabbitmq_node_pid
from benchmarks.python_source_floor import PythonSourceFloor
from testbed.rabbitmq import rabbitmq
from testbed.spark import local_session

BODY = bytes(range(100))
QUEUE = "bench-source"
SOURCE_PREFETCH = 131070
PREFETCH = 65535  #: the most one consumer may have: the raw client's and pika's
CHUNK = 10_000
#: Rows read through the source, untimed, before a broker's first contender: three batches.
WARM_UP = 60_000
HAND_WRITTEN_SCHEMA = (
    "body binary, routing_key string, exchange string, delivery_tag bigint, redelivered boolean"
)
SOURCE, TUNED = "amqp source, defaults", f"amqp source, prefetch {SOURCE_PREFETCH}"
#: The default window on RabbitMQ (and the only default before the bundled broker got its
#: own): beside the defaults, the window's share of the bundled broker's figures.
WINDOW_40000 = "amqp source, prefetch 40000"
RAW, HAND_WRITTEN = "raw client consume", "pika + createDataFrame loop"
FLOOR = "trivial Python source (no broker)"
CONSUMING_FLOOR = "trivial Python source consuming the queue"


def _fill(url: str, count: int, queue: str = QUEUE, stream: bool = False) -> None:
    """Purge ``queue`` (a stream queue, which cannot be purged: declare it anew) and publish
    ``count`` messages with confirms."""
    with connect(url) as conn, conn.channel() as ch:
        if stream:
            ch.queue_delete(queue)
            ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
        else:
            ch.queue_declare(queue)
            ch.queue_purge(queue)
        ch.confirm_select()
        for first in range(0, count, 1000):
            ch.basic_publish_batch("", [(queue, BODY, None)] * min(1000, count - first))
        ch.wait_for_confirms(timeout=600)


def _source_rate(spark: Any, url: str, count: int, scratch: Path, **options: str) -> float:
    df = spark.readStream.format("amqp").options(**{"uri": url, "queue": QUEUE, **options}).load()
    return available_now_rate(df, count, scratch)


def available_now_rate(df: Any, count: int, scratch: Path) -> float:
    """rows/s of an AvailableNow run of the streaming ``df`` into ``noop``, from ``start()``
    to the end of the run, checked to have read ``count`` rows."""
    checkpoint = scratch / f"ck-{time.monotonic_ns()}"
    start = time.perf_counter()
    query = (
        df.writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
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
    print(f"  {phases(query.recentProgress, elapsed)}", file=sys.stderr, flush=True)
    return count / elapsed


#: Spark's phases of a micro-batch (``durationMs`` of its progress), as ``phases`` sums them.
PHASES = {
    "waiting for the source (latestOffset)": ("latestOffset",),
    "planning": ("queryPlanning", "getBatch"),
    "reading and writing (addBatch)": ("addBatch",),
    "offset and commit logs": ("walCommit", "commitOffsets"),
}


def phases(progress: list[dict[str, Any]], elapsed: float) -> str:
    """Where a run's wall time went: the time outside Spark's triggers (the query's start,
    its runner's start-up, its end) and, summed over the batches, Spark's phases."""
    seconds = {
        name: sum(p["durationMs"].get(k, 0) for p in progress for k in keys) / 1000
        for name, keys in PHASES.items()
    }
    triggers = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
    return (
        f"{elapsed:.2f} s in all: {elapsed - triggers:.2f} s outside the {len(progress)} "
        "triggers (start, end); " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items())
    )


def _floor_rate(spark: Any, count: int, scratch: Path) -> float:
    """The trivial Python source (``python_source_floor``): Spark's own cost of a Python
    streaming source, the bound no design of the ``amqp`` source can pass."""
    df = spark.readStream.format(PythonSourceFloor.name()).option("rows", count).load()
    return available_now_rate(df, count, scratch)


def _consuming_floor_rate(spark: Any, url: str, count: int, scratch: Path) -> float:
    """The trivial source consuming the queue as the source does (``consuming_floor``):
    about what the source would read if all it does beyond consuming cost nothing."""
    df = (
        spark.readStream.format(ConsumingFloor.name())
        .options(rows=str(count), uri=url, queue=QUEUE)
        .load()
    )
    return available_now_rate(df, count, scratch)


def _raw_rate(url: str, count: int) -> float:
    with connect(url) as conn, conn.channel() as ch:
        ch.basic_qos(prefetch_count=PREFETCH)
        start = time.perf_counter()
        ch.basic_consume(QUEUE)
        got = acked = 0
        while got < count:
            first = ch.next_delivery(timeout=10)
            if first is None:
                raise TimeoutError(f"raw consumer: stalled after {got} of {count}")
            got += 1 + len(ch.drain_deliveries(max_count=count))
            if got - acked >= CHUNK or got >= count:
                # Tags are consecutive on a fresh channel: the last one is `got`.
                ch.basic_ack(got, multiple=True)
                acked = got
        return count / (time.perf_counter() - start)


def _hand_written_rate(spark: Any, url: str, count: int) -> float:
    import pika

    params = pika.URLParameters(url)
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=PREFETCH)
        start = time.perf_counter()
        rows: list[tuple[bytes, str, str, int, bool]] = []
        consumed = ch.consume(QUEUE, inactivity_timeout=10)
        for got, (method, _props, body) in enumerate(consumed, start=1):
            if method is None:
                raise TimeoutError(f"hand-written consumer: stalled after {got - 1} of {count}")
            rows.append(
                (body, method.routing_key, method.exchange, method.delivery_tag, method.redelivered)
            )
            if len(rows) == CHUNK or got == count:
                spark.createDataFrame(rows, HAND_WRITTEN_SCHEMA).write.format("noop").mode(
                    "overwrite"
                ).save()
                ch.basic_ack(method.delivery_tag, multiple=True)
                rows = []
            if got == count:
                break
        elapsed = time.perf_counter() - start
        ch.cancel()
        return count / elapsed


@dataclass
class Best:
    """A contender's best rate over the rounds, and its run's CPU-seconds per process."""

    rate: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _best_rates(
    spark: Any, url: str, count: int, rounds: int, scratch: Path, label: str
) -> dict[str, Best]:
    """Each contender's best over ``rounds``, the order rotating from round to round."""
    contenders: list[tuple[str, Callable[[], float]]] = [
        (SOURCE, lambda: _source_rate(spark, url, count, scratch)),
        (RAW, lambda: _raw_rate(url, count)),
        (HAND_WRITTEN, lambda: _hand_written_rate(spark, url, count)),
        (TUNED, lambda: _source_rate(spark, url, count, scratch, prefetch=str(SOURCE_PREFETCH))),
        (FLOOR, lambda: _floor_rate(spark, count, scratch)),
        (CONSUMING_FLOOR, lambda: _consuming_floor_rate(spark, url, count, scratch)),
        (WINDOW_40000, lambda: _source_rate(spark, url, count, scratch, prefetch="40000")),
    ]
    port = urlsplit(url).port
    broker_pid = rabbitmq_node_pid(port) if port is not None else None
    # Warm-up: the source's Python workers start, and the JVM compiles the streaming path
    # over three batches rather than one.
    _fill(url, WARM_UP)
    _source_rate(spark, url, WARM_UP, scratch)
    best = {name: Best() for name, _ in contenders}
    for i in range(rounds):
        for name, measure in contenders[i:] + contenders[:i]:
            _fill(url, count)
            load = _load()
            with ProcessCPU(broker_pid) as cpu:
                rate = measure()
            per_million = {k: v * 1e6 / count for k, v in cpu.seconds.items()}
            print(
                f"{label}: {name}: {rate:,.0f} rows/s; CPU-s per 1M rows "
                + ", ".join(f"{k} {per_million[k]:.1f}" for k in KINDS)
                + f"; load {load}-{_load()}",
                file=sys.stderr,
                flush=True,
            )
            if rate > best[name].rate:
                best[name] = Best(rate, per_million)
    return best


@contextlib.contextmanager
def _bundled() -> Iterator[str]:
    with bundled_broker() as (host, port):
        yield f"amqp://guest:guest@{host}:{port}/%2F"


def _rows(broker: str, count: int, best: dict[str, Best]) -> list[Row]:
    what = f"source, {broker}: AvailableNow over {count:,} x 100 B into noop"
    default, tuned, consuming = best[SOURCE], best[TUNED], best[CONSUMING_FLOOR]
    rows = [
        row(f"{what}, defaults", "rows/s", default.rate, best[RAW].rate, RAW),
        row(f"{what}, defaults", "rows/s", default.rate, best[HAND_WRITTEN].rate, HAND_WRITTEN),
        row(f"{what}, {TUNED}", "rows/s", tuned.rate, best[RAW].rate, RAW),
        row(f"{what}, {WINDOW_40000}", "rows/s", best[WINDOW_40000].rate, best[RAW].rate, RAW),
        row(f"{what}, defaults", "rows/s", default.rate, best[FLOOR].rate, FLOOR),
        row(f"{what}, defaults", "rows/s", default.rate, consuming.rate, CONSUMING_FLOOR),
        row(f"{what}, {CONSUMING_FLOOR}", "rows/s", consuming.rate, best[FLOOR].rate, FLOOR),
    ]
    # Where the defaults' time goes; the broker's beside what it spent on the raw client.
    for kind in KINDS:
        reference = best[RAW].cpu.get("broker") if kind == "broker" else None
        rows.append(
            row(
                f"{what}, defaults: CPU per 1M rows, {kind}",
                "CPU-s",
                default.cpu.get(kind, 0.0),
                reference,
                f"{RAW}, broker" if reference is not None else "",
            )
        )
    return rows


#: The brokers measured, in this order, by their ``--broker`` names.
BROKERS: dict[str, tuple[str, Callable[[], contextlib.AbstractContextManager[str]]]] = {
    "bundled": ("bundled broker", _bundled),
    "rabbitmq4": ("RabbitMQ 4", lambda: rabbitmq(4)),
    "rabbitmq3": ("RabbitMQ 3.10", lambda: rabbitmq(3)),
}


def measure(
    count: int, rounds: int, only: Sequence[str] = tuple(BROKERS)
) -> dict[str, dict[str, Best]]:
    """Per broker (of ``only``: by default the bundled one, RabbitMQ 4, RabbitMQ 3.10), each
    contender's best."""
    brokers = [BROKERS[name] for name in BROKERS if name in only]
    found: dict[str, dict[str, Best]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-source-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        spark.dataSource.register(PythonSourceFloor)
        spark.dataSource.register(ConsumingFloor)
        try:
            for broker, start_broker in brokers:
                with start_broker() as url:
                    found[broker] = _best_rates(spark, url, count, rounds, Path(scratch), broker)
        finally:
            spark.stop()
    return found


def markdown(found: dict[str, dict[str, Best]]) -> str:
    """One table of every broker and contender (defaults first): rows/s, the ratio to the raw
    client, to the trivial Python source, to it consuming the queue and (for the defaults) to
    the pika loop, CPU-s per million rows per process."""
    lines = [
        "| broker | contender | rows/s | vs raw client | vs trivial source | "
        "vs trivial source consuming | vs pika loop | " + " | ".join(KINDS) + " |",
        "| --- | --- | --- | --- | --- | --- | --- | " + " | ".join("---" for _ in KINDS) + " |",
    ]
    for broker, best in found.items():
        raw, floor, pika = best[RAW].rate, best[FLOOR].rate, best[HAND_WRITTEN].rate
        consuming = best[CONSUMING_FLOOR].rate
        for name in (SOURCE, TUNED, WINDOW_40000, RAW, HAND_WRITTEN, FLOOR, CONSUMING_FLOOR):
            b = best[name]
            versus_pika = f"{b.rate / pika:.2f}x" if name == SOURCE and pika else ""
            lines.append(
                f"| {broker} | {name} | {b.rate:,.0f} | {b.rate / raw:.2f}x | "
                f"{b.rate / floor:.2f}x | {b.rate / consuming:.2f}x | {versus_pika} | "
                + " | ".join(f"{b.cpu.get(k, 0.0):.1f}" for k in KINDS)
                + " |"
            )
    return "\n".join(lines)


def _size(quick: bool, count: int | None, rounds: int | None) -> tuple[int, int]:
    """The backlog and the rounds: as given, else 1M and two rounds (``quick``: 100k, one)."""
    return count or (100_000 if quick else 1_000_000), rounds or (1 if quick else 2)


def run(quick: bool, count: int | None = None, rounds: int | None = None) -> list[Row]:
    count, rounds = _size(quick, count, rounds)
    found = measure(count, rounds)
    return [r for broker, best in found.items() for r in _rows(broker, count, best)]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_source")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--count", type=int, help="messages in the backlog")
    parser.add_argument("--rounds", type=int, help="rounds (each contender once a round)")
    parser.add_argument(
        "--broker",
        action="append",
        choices=list(BROKERS),
        help="measure only this broker (repeatable; default: all three)",
    )
    args = parser.parse_args()
    count, rounds = _size(args.quick, args.count, args.rounds)
    found = measure(count, rounds, args.broker or tuple(BROKERS))
    for broker, best in found.items():
        for r in _rows(broker, count, best):
            ref = r["reference"]
            ratio = f" ({r['ours'] / ref:.2f}x)" if ref else ""
            name = r["reference_name"] or "-"
            print(f"{r['figure']}: {r['ours']:,.1f} vs {name} {ref or 0:,.1f}{ratio}")
    print(f"\nBest of each, CPU-s per million rows per process ({count:,} x 100 B):\n")
    print(markdown(found))
