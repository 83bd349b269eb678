"""The sink writing into a stream queue over RabbitMQ's stream protocol (``stream``: exactly
once) against the same write over AMQP 0-9-1, beside rstream's producer (the stream
protocol's native speed, no Spark).

``--count`` rows of 100 bytes (300,000 by default; 30,000 with ``--quick``), each run into a
stream queue declared anew:

* ``sink, stream protocol``: ``df.write.format("amqp")`` with the option ``stream``
  (publisher deduplication under the write's producer names: the exactly-once path);
* ``sink, AMQP 0-9-1``: the same write with ``routingKey`` the stream queue and confirms
  (the sink's default);
* ``rstream``: rstream 1.1's ``Producer`` in this process on one connection, under a
  producer name, ``send_batch`` of 1,000 messages while fewer than the sink's default
  ``maxInFlight`` are unconfirmed; the messages are the bytes the sink writes for such rows,
  made before the clock starts.

The DataFrame is ``spark.range(count, numPartitions=2)`` with a constant body, written in a
local[2] session started beforehand (two tasks, a connection each; the login given as the
options ``username`` and ``password``); a write is timed around ``save()``: planning, the
job and every confirm. After each run the stream is checked to hold ``count`` messages
(the offsets of its first and newest chunks, over the stream protocol). Two brokers in one
run: the bundled broker in its own process (``python -m broker --stream-port``) and
RabbitMQ 4 (``rabbitmq_stream``; ``AMQP_SPARK_RABBITMQ_URL`` or a private node,
testbed/rabbitmq.py). Per broker, one untimed run of each over a tenth of the rows warms up;
then the three alternate over ``--rounds`` rounds (two; one with ``--quick``), the order
rotating, each keeping its best run. CPU per process from ``/proc``
(benchmarks/process_cpu.py): the writer (Spark's Python workers; rstream's is this
process), the JVM (driver and executors: one JVM in local mode; not counted for rstream,
which does not use it), the broker and, for the Spark writes, this process (the driver's
Python, and the sampling).

``python -m benchmarks.bench_stream_sink [--count N] [--rounds R] [--broker bundled|rabbitmq4]``
prints every run (with the load average at its start and end) and one Markdown table with
the ratios sink-stream / sink-0-9-1 and sink-stream / rstream.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rstream import ConfirmationStatus, Producer

from amqp_protocol.amqp10 import from_amqp091
from amqp_protocol.stream.chunk import ChunkHeader, parse_chunk_header
from amqp_protocol.stream.values import OffsetSpecification, OffsetType
from amqp_spark.client.stream import StreamClient, StreamEndpoint
from amqp_spark.datasource import AMQPDataSource
from amqp_spark.sink.settings import SinkSettings
from benchmarks.bench_sink import BODY, write_rate
from benchmarks.bench_source import _fill, _load, _size
from benchmarks.bench_stream_protocol import BROKERS, Endpoints
from benchmarks.common import Row, row
from benchmarks.login import login_options
from benchmarks.process_cpu import ProcessCPU, rabbitmq_node_pid
from testbed.spark import local_session

STREAM = "bench-stream-sink"
#: The writers, in this order.
WRITERS = ("stream", "amqp", "rstream")
LABELS = {
    "stream": "sink, stream protocol",
    "amqp": "sink, AMQP 0-9-1",
    "rstream": "rstream producer",
}
#: CPU groups reported, per million rows.
GROUPS = ("writer", "jvm", "broker", "driver")
GROUP_LABELS = {
    "writer": "writer",
    "jvm": "JVM",
    "broker": "broker",
    "driver": "driver's Python",
}
#: Messages per rstream ``send_batch`` (one Publish frame each).
RSTREAM_BATCH = 1000
#: Seconds a wait for a confirm or a chunk may take.
TIMEOUT = 60.0
#: The ratios shown: (label, ours, reference).
RATIOS = (
    ("sink-stream / sink-0-9-1", "stream", "amqp"),
    ("sink-stream / rstream", "stream", "rstream"),
)


@dataclass
class Best:
    rate: float = 0.0
    #: CPU-seconds per million rows by group (a group absent: not this writer's).
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


def _groups(writer: str, seconds: dict[str, float], count: int) -> dict[str, float]:
    """``ProcessCPU``'s seconds by kind as CPU-seconds per million rows by group."""
    if writer == "rstream":
        by_group = {"writer": seconds["driver"], "broker": seconds["broker"]}
    else:
        by_group = {
            "writer": seconds["executors"],
            "jvm": seconds["jvm"],
            "broker": seconds["broker"],
            "driver": seconds["driver"],
        }
    return {group: value * 1e6 / count for group, value in by_group.items()}


def _sink_options(writer: str, where: Endpoints) -> dict[str, str]:
    if writer == "stream":
        return {"stream": STREAM, **login_options(uri=where.url, streamUri=where.stream_uri)}
    return {"routingKey": STREAM, **login_options(uri=where.url)}


def stored_messages(stream_uri: str, stream: str) -> int:
    """How many messages ``stream`` holds: the offset after its newest message less its
    first offset (a stream's first offset need not be 0)."""
    with StreamClient(StreamEndpoint.parse(stream_uri), timeout=TIMEOUT) as client:
        first = _first_chunk(client, stream, OffsetType.FIRST).first_offset
        return _first_chunk(client, stream, OffsetType.LAST).next_offset - first


def _first_chunk(client: StreamClient, stream: str, at: OffsetType) -> ChunkHeader:
    client.subscribe(0, stream, OffsetSpecification(at), 1)
    try:
        delivery = client.next_delivery(TIMEOUT)
    finally:
        client.unsubscribe(0)
    if delivery is None:
        raise AssertionError(f"stream {stream!r} delivered no chunk at {at.name}")
    return parse_chunk_header(delivery.chunk)


def rstream_messages(count: int) -> list[bytes]:
    """What the sink writes for ``count`` rows of ``BODY`` of one partition: the AMQP 1.0
    messages of persistent 0-9-1 messages with the sink's ids."""
    prefix = f"{uuid.uuid4()}:0:0:"
    return [
        from_amqp091({"delivery_mode": 2, "message_id": f"{prefix}{n}"}, BODY) for n in range(count)
    ]


def rstream_rate(stream_uri: str, messages: Sequence[bytes], max_in_flight: int) -> float:
    """rows/s of rstream's producer writing ``messages`` into ``STREAM``, from the first
    publish (the publisher's declaration included) to the last confirm."""
    return asyncio.run(_rstream_publish(StreamEndpoint.parse(stream_uri), messages, max_in_flight))


async def _rstream_publish(
    endpoint: StreamEndpoint, messages: Sequence[bytes], max_in_flight: int
) -> float:
    sent = confirmed = refused = 0
    answered = asyncio.Event()

    async def on_confirm(status: ConfirmationStatus) -> None:
        nonlocal confirmed, refused
        if status.is_confirmed:
            confirmed += 1
        else:
            refused += 1
        answered.set()

    async def until_outstanding_at_most(limit: int) -> None:
        while sent - confirmed - refused > limit:
            answered.clear()
            await asyncio.wait_for(answered.wait(), TIMEOUT)

    name = f"bench-rstream-{uuid.uuid4()}"
    async with Producer(
        endpoint.host,
        endpoint.port,
        username=endpoint.username,
        password=endpoint.password,
        vhost=endpoint.vhost,
    ) as producer:
        start = time.perf_counter()
        for first in range(0, len(messages), RSTREAM_BATCH):
            batch = messages[first : first + RSTREAM_BATCH]
            await until_outstanding_at_most(max_in_flight - len(batch))
            await producer.send_batch(
                STREAM, list(batch), publisher_name=name, on_publish_confirm=on_confirm
            )
            sent += len(batch)
        await until_outstanding_at_most(0)
        elapsed = time.perf_counter() - start
    if refused:
        raise AssertionError(f"rstream: the broker refused {refused} of {len(messages)} messages")
    return len(messages) / elapsed


def _writers(
    spark: Any, where: Endpoints, count: int, messages: Sequence[bytes]
) -> dict[str, Callable[[int], float]]:
    """Per writer: a function that writes that many rows into ``STREAM`` and returns rows/s."""
    max_in_flight = SinkSettings.parse({"uri": where.url}).max_in_flight
    return {
        "stream": lambda n: write_rate(spark, n, _sink_options("stream", where)),
        "amqp": lambda n: write_rate(spark, n, _sink_options("amqp", where)),
        "rstream": lambda n: rstream_rate(where.stream_uri, messages[:n], max_in_flight),
    }


def _one_run(where: Endpoints, write: Callable[[int], float], count: int) -> float:
    """Into ``STREAM`` declared anew; checks that it holds ``count`` messages afterwards."""
    _fill(where.url, 0, STREAM, stream=True)
    rate = write(count)
    stored = stored_messages(where.stream_uri, STREAM)
    if stored != count:
        raise AssertionError(f"the stream holds {stored} messages after writing {count}")
    return rate


def _best_rates(
    spark: Any, where: Endpoints, count: int, rounds: int, messages: Sequence[bytes], label: str
) -> dict[str, Best]:
    """Each writer's best run over ``rounds``, the order rotating."""
    port = urlsplit(where.url).port
    broker_pid = rabbitmq_node_pid(port) if port is not None else None
    writers = _writers(spark, where, count, messages)
    for write in writers.values():
        _one_run(where, write, max(1, count // 10))
    best = {writer: Best() for writer in WRITERS}
    for i in range(rounds):
        for writer in WRITERS[i % 3 :] + WRITERS[: i % 3]:
            load = _load()
            with ProcessCPU(broker_pid) as cpu:
                rate = _one_run(where, writers[writer], count)
            per_million = _groups(writer, cpu.seconds, count)
            print(
                f"{label}: {LABELS[writer]}: {rate:,.0f} rows/s; CPU-s per 1M rows "
                + ", ".join(f"{GROUP_LABELS[g]} {v:.2f}" for g, v in per_million.items())
                + f"; load {load}-{_load()}",
                file=sys.stderr,
                flush=True,
            )
            if rate > best[writer].rate:
                best[writer] = Best(rate, per_million)
    return best


def measure(
    count: int, rounds: int, only: Sequence[str] = tuple(BROKERS)
) -> dict[str, dict[str, Best]]:
    """Per broker (of ``only``), each writer's best."""
    messages = rstream_messages(count)
    found: dict[str, dict[str, Best]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-stream-sink-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            for name in BROKERS:
                if name not in only:
                    continue
                broker, start = BROKERS[name]
                with start() as where:
                    found[broker] = _best_rates(spark, where, count, rounds, messages, broker)
        finally:
            spark.stop()
    return found


def _cell(best: Best, group: str) -> str:
    return f"{best.cpu[group]:.2f}" if group in best.cpu else "-"


def _ratio(ours: float | None, theirs: float | None) -> str:
    return f"{ours / theirs:.2f}x" if ours is not None and theirs else "-"


def markdown(found: dict[str, dict[str, Best]]) -> str:
    """One row per broker and writer, then the ratios."""
    lines = [
        "| broker | writer | rows/s | CPU-s per 1M rows: "
        + " | ".join(GROUP_LABELS[g] for g in GROUPS)
        + " | all |",
        "| --- | --- | --- | " + " | ".join("---" for _ in GROUPS) + " | --- |",
    ]
    for broker, best in found.items():
        for writer in WRITERS:
            b = best[writer]
            lines.append(
                f"| {broker} | {LABELS[writer]} | {b.rate:,.0f} | "
                + " | ".join(_cell(b, g) for g in GROUPS)
                + f" | {b.total:.2f} |"
            )
        for label, mine, theirs in RATIOS:
            ours, reference = best[mine], best[theirs]
            lines.append(
                f"| {broker} | {label} | {_ratio(ours.rate, reference.rate)} | "
                + " | ".join(_ratio(ours.cpu.get(g), reference.cpu.get(g)) for g in GROUPS)
                + f" | {_ratio(ours.total, reference.total)} |"
            )
    return "\n".join(lines)


def _rows(broker: str, count: int, best: dict[str, Best]) -> list[Row]:
    what = f"sink into a stream, {broker}: {count:,} x 100 B"
    rows = []
    for _, mine, theirs in RATIOS:
        ours, reference, name = best[mine], best[theirs], LABELS[theirs]
        rows.append(row(f"{what}, stream protocol", "rows/s", ours.rate, reference.rate, name))
        for group in (*GROUPS, "all"):
            mine_cpu = ours.total if group == "all" else ours.cpu.get(group)
            their_cpu = reference.total if group == "all" else reference.cpu.get(group)
            if mine_cpu is None or their_cpu is None:
                continue
            label = "all processes" if group == "all" else GROUP_LABELS[group]
            rows.append(
                row(f"{what}: CPU per 1M rows, {label}", "CPU-s", mine_cpu, their_cpu, name)
            )
    return rows


def run(quick: bool, count: int | None = None, rounds: int | None = None) -> list[Row]:
    count, rounds = _sink_size(quick, count, rounds)
    found = measure(count, rounds)
    return [r for broker, best in found.items() for r in _rows(broker, count, best)]


def _sink_size(quick: bool, count: int | None, rounds: int | None) -> tuple[int, int]:
    """The rows and rounds: as given, else 300,000 and two (``quick``: 30,000, one)."""
    return count or (30_000 if quick else 300_000), rounds or _size(quick, None, None)[1]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_stream_sink")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--count", type=int, help="rows written per run")
    parser.add_argument("--rounds", type=int, help="rounds (each writer once a round)")
    parser.add_argument(
        "--broker", action="append", choices=tuple(BROKERS), help="only this broker (repeatable)"
    )
    args = parser.parse_args()
    count, rounds = _sink_size(args.quick, args.count, args.rounds)
    found = measure(count, rounds, tuple(args.broker or BROKERS))
    print(markdown(found))
