"""Source throughput: ``spark.readStream.format("amqp")`` draining a backlog.

A backlog of 1 million 100-byte messages (100 000 with ``--quick``) in one classic queue,
read by a Trigger.AvailableNow query into the ``noop`` sink; rows/s over the whole run, from
``start()`` to the end of the run (query start, planning, acks included), ``prefetch`` 131070
(two consumers of 65535 on the queue's channel, so micro-batches of 65535), a local[2] session
started beforehand and warmed up by a small run.

Beside it, on the same broker in the same run, each reading the same backlog refilled:

* the raw client: our client consuming the queue in this process (prefetch 65535, acking
  every 10 000 with ``multiple``), nothing else done with the messages — the ceiling, since
  the source consumes through this client;
* the hand-written alternative: a pika consumer (prefetch 65535) collecting 10 000
  deliveries at a time as tuples (body, routing_key, exchange, delivery_tag, redelivered),
  ``createDataFrame`` on them, a ``noop`` write, then an ack of the 10 000.

The three alternate over rounds (two, one with ``--quick``), each round in another order,
and each keeps its best: the machine is shared, and load only ever slows a run down.
Both brokers: RabbitMQ (``AMQP_SPARK_RABBITMQ_URL`` or a private node,
tests/support/rabbitmq.py) and the bundled broker in its own process (``python -m broker``).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from benchmarks.bench_broker import bundled_broker
from benchmarks.common import Row, row
from tests.support.rabbitmq import rabbitmq
from tests.support.spark import local_session

BODY = bytes(range(100))
QUEUE = "bench-source"
SOURCE_PREFETCH = 131070
PREFETCH = 65535  #: the most one consumer may have: the raw client's and pika's
CHUNK = 10_000
HAND_WRITTEN_SCHEMA = (
    "body binary, routing_key string, exchange string, delivery_tag bigint, redelivered boolean"
)
SOURCE, RAW, HAND_WRITTEN = "amqp source", "raw client consume", "pika + createDataFrame loop"


def _fill(url: str, count: int) -> None:
    """Purge the queue and publish ``count`` messages with confirms."""
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(QUEUE)
        ch.queue_purge(QUEUE)
        ch.confirm_select()
        for first in range(0, count, 1000):
            ch.basic_publish_batch("", [(QUEUE, BODY, None)] * min(1000, count - first))
        ch.wait_for_confirms(timeout=600)


def _source_rate(spark: Any, url: str, count: int, scratch: Path) -> float:
    df = (
        spark.readStream.format("amqp")
        .options(uri=url, queue=QUEUE, prefetch=str(SOURCE_PREFETCH))
        .load()
    )
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
    return count / elapsed


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


def _best_rates(spark: Any, url: str, count: int, rounds: int, scratch: Path) -> dict[str, float]:
    """Each contender's best rate over ``rounds``, the order rotating from round to round."""
    contenders: list[tuple[str, Callable[[], float]]] = [
        (SOURCE, lambda: _source_rate(spark, url, count, scratch)),
        (RAW, lambda: _raw_rate(url, count)),
        (HAND_WRITTEN, lambda: _hand_written_rate(spark, url, count)),
    ]
    _fill(url, 1000)
    _source_rate(spark, url, 1000, scratch)  # warm-up: the source's Python workers start
    best = dict.fromkeys((name for name, _ in contenders), 0.0)
    for i in range(rounds):
        for name, measure in contenders[i:] + contenders[:i]:
            _fill(url, count)
            best[name] = max(best[name], measure())
    return best


@contextlib.contextmanager
def _bundled() -> Iterator[str]:
    with bundled_broker() as (host, port):
        yield f"amqp://guest:guest@{host}:{port}/%2F"


def run(quick: bool) -> list[Row]:
    count, rounds = (100_000, 1) if quick else (1_000_000, 2)
    brokers: list[tuple[str, Callable[[], contextlib.AbstractContextManager[str]]]] = [
        ("RabbitMQ", rabbitmq),
        ("bundled broker", _bundled),
    ]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-source-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            for broker, start_broker in brokers:
                with start_broker() as url:
                    best = _best_rates(spark, url, count, rounds, Path(scratch))
                what = f"source, {broker}: AvailableNow over {count:,} x 100 B into noop"
                rows += [
                    row(what, "rows/s", best[SOURCE], best[RAW], RAW),
                    row(what, "rows/s", best[SOURCE], best[HAND_WRITTEN], HAND_WRITTEN),
                ]
        finally:
            spark.stop()
    return rows


if __name__ == "__main__":
    import sys

    for r in run(quick="--quick" in sys.argv):
        ratio = r["ours"] / r["reference"] if r["reference"] else float("nan")
        print(
            f"{r['figure']}: {r['ours']:,.0f} vs {r['reference_name']} "
            f"{r['reference'] or 0:,.0f} ({ratio:.2f}x)"
        )
