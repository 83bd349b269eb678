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
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rstream import ConfirmationStatus, Producer

from amqp_protocol.amqp10 import from_amqp091
from amqp_protocol.stream.chunk import ChunkHeader, parse_chunk_header
from amqp_protocol.stream.values import OffsetSpecification, OffsetType
from amqp_spark.client.stream import StreamClient, StreamEndpoint
from amqp_spark.sink.settings import SinkSettings
from benchmarks import stream_brokers
from benchmarks.bench_sink import BODY, write_rate
from benchmarks.bench_source import _fill, _size
from benchmarks.common import Row, row
from benchmarks.login import login_options
from benchmarks.stream_brokers import (
    BROKERS,
    Best,
    Endpoints,
    best_of_rounds,
    command_line,
    on_each_broker,
)

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
    spark: Any, where: Endpoints, messages: Sequence[bytes]
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
    writers = _writers(spark, where, messages)
    for write in writers.values():
        _one_run(where, write, max(1, count // 10))

    def writing(writer: str) -> Callable[[], float]:
        return lambda: _one_run(where, writers[writer], count)

    def per_million(writer: str, seconds: dict[str, float]) -> dict[str, float]:
        return _groups(writer, seconds, count)

    runs = {writer: writing(writer) for writer in WRITERS}
    return best_of_rounds(runs, rounds, where, per_million, (label, LABELS, GROUP_LABELS))


def measure(
    count: int, rounds: int, only: Sequence[str] = tuple(BROKERS)
) -> dict[str, dict[str, Best]]:
    """Per broker (of ``only``), each writer's best."""
    messages = rstream_messages(count)

    def on(spark: Any, where: Endpoints, scratch: Path, broker: str) -> dict[str, Best]:
        return _best_rates(spark, where, count, rounds, messages, broker)

    return on_each_broker(on, only, "bench-stream-sink-")


def markdown(found: dict[str, dict[str, Best]]) -> str:
    """One row per broker and writer, then the ratios."""
    return stream_brokers.markdown(found, "writer", LABELS, GROUP_LABELS, RATIOS)


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
    count, rounds, brokers = command_line(
        "python -m benchmarks.bench_stream_sink", "rows written per run", _sink_size
    )
    print(markdown(measure(count, rounds, brokers)))
