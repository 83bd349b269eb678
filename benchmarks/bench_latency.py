"""End-to-end latency through ``amqp`` source -> ``amqp`` sink at a steady low rate.

A publisher in this process sends ``--rate`` messages a second (default 200) to a classic
queue, each body the wall-clock time it was sent (ns, 8 bytes); a streaming query with the
default trigger reads that queue with the source at its defaults and writes the bodies with
the sink to a second queue, which a consumer in this process reads: a message's latency is
its arrival there minus its send time (one machine, one clock). Counting starts
``--warm-up`` seconds after the first message came through (query start, JIT); then the
messages sent in ``--seconds`` are measured. Prints the
percentiles per broker (the bundled broker, RabbitMQ 4) with the load average.

    python -m benchmarks.bench_latency [--rate 200] [--seconds 30] [--broker bundled|rabbitmq4]
"""

from __future__ import annotations

import contextlib
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from benchmarks.bench_broker import bundled_broker
from benchmarks.common import Row, row
from testbed.rabbitmq import rabbitmq
from testbed.spark import local_session

IN, OUT = "bench-latency-in", "bench-latency-out"
_STAMP = struct.Struct(">q")
#: How long the query may take to deliver its first message (its start, under load).
_START_BOUND = 600.0
#: How long to wait past the measured interval for the messages sent at its end.
_LAST_WAIT = 5.0


def _publish(url: str, rate: float, stop: threading.Event) -> None:
    """Publish one message every 1/rate s, each stamped with its send time, until ``stop``."""
    with connect(url) as conn, conn.channel() as ch:
        start, sent = time.monotonic(), 0
        while not stop.is_set():
            pause = start + sent / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            ch.basic_publish("", IN, _STAMP.pack(time.time_ns()))
            sent += 1


def _latencies(url: str, warm_up: float, seconds: float) -> list[float]:
    """Seconds from send to arrival of every message sent in the ``seconds`` that follow
    ``warm_up`` seconds after the first arrival (the query has started), and arrived."""
    found: list[float] = []
    with connect(url) as conn, conn.channel() as ch:
        ch.basic_consume(OUT, no_ack=True)
        first = ch.next_delivery(timeout=_START_BOUND)
        if first is None:
            raise TimeoutError(f"nothing came through the query in {_START_BOUND:.0f} s")
        count_from = time.time() + warm_up
        until = count_from + seconds
        # Messages sent in the last second may still be on their way: wait for them too.
        while time.time() < until + _LAST_WAIT:
            delivery = ch.next_delivery(timeout=0.5)
            if delivery is None:
                continue
            arrived = time.time_ns()
            (sent,) = _STAMP.unpack(delivery.body)
            if count_from * 1e9 <= sent < until * 1e9:
                found.append((arrived - sent) / 1e9)
    return found


def measure(spark: object, url: str, rate: float, warm_up: float, seconds: float) -> list[float]:
    with connect(url) as conn, conn.channel() as ch:
        for queue in (IN, OUT):
            ch.queue_declare(queue)
            ch.queue_purge(queue)
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as checkpoint:
        query = (
            spark.readStream.format("amqp")  # type: ignore[attr-defined]
            .option("uri", url)
            .option("queue", IN)
            .load()
            .select("body")
            .writeStream.format("amqp")
            .option("uri", url)
            .option("routingKey", OUT)
            .option("checkpointLocation", checkpoint)
            .start()
        )
        stop = threading.Event()
        publisher = threading.Thread(target=_publish, args=(url, rate, stop))
        publisher.start()
        try:
            return _latencies(url, warm_up, seconds)
        finally:
            stop.set()
            publisher.join()
            query.stop()


def percentiles(found: list[float]) -> dict[str, float]:
    """p50, p90, p99 and max of ``found``, in ms."""
    if len(found) < 100:
        raise RuntimeError(f"only {len(found)} messages came through the query")
    cuts = statistics.quantiles(found, n=100)
    return {
        "p50": cuts[49] * 1000,
        "p90": cuts[89] * 1000,
        "p99": cuts[98] * 1000,
        "max": max(found) * 1000,
    }


@contextlib.contextmanager
def _bundled() -> Iterator[str]:
    with bundled_broker() as (host, port):
        yield f"amqp://guest:guest@{host}:{port}/%2F"


BROKERS: dict[str, Callable[[], contextlib.AbstractContextManager[str]]] = {
    "bundled": _bundled,
    "rabbitmq4": lambda: rabbitmq(4),
}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure_brokers(
    brokers: Sequence[str], rate: float, warm_up: float, seconds: float
) -> dict[str, dict[str, float]]:
    """Per broker, the percentiles (ms); each printed as it is measured, with the load."""
    found: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            for name in brokers:
                with BROKERS[name]() as url:
                    load = _load()
                    latencies = measure(spark, url, rate, warm_up, seconds)
                found[name] = percentiles(latencies)
                print(
                    f"{name}: {rate:.0f} msg/s, default trigger, {len(latencies)} messages: "
                    + ", ".join(f"{k} {v:,.0f} ms" for k, v in found[name].items())
                    + f"; load {load} -> {_load()}",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            spark.stop()
    return found


def run(quick: bool) -> list[Row]:
    """The percentiles at 200 msg/s on the bundled broker and RabbitMQ 4 (``quick``: 10 s
    measured after 5, else 30 after 10)."""
    seconds, warm_up = (10.0, 5.0) if quick else (30.0, 10.0)
    found = measure_brokers(list(BROKERS), 200.0, warm_up, seconds)
    return [
        row(f"latency, source -> sink, 200 msg/s, {name}: {which}", "ms", value)
        for name, figures in found.items()
        for which, value in figures.items()
    ]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_latency")
    parser.add_argument("--rate", type=float, default=200.0, help="messages a second")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds")
    parser.add_argument("--warm-up", type=float, default=10.0, help="seconds not counted")
    parser.add_argument("--broker", action="append", choices=list(BROKERS))
    args = parser.parse_args()
    measure_brokers(args.broker or list(BROKERS), args.rate, args.warm_up, args.seconds)
