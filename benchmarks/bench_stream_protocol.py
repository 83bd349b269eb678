"""A stream query over RabbitMQ's stream protocol against the same query over AMQP 0-9-1.

One stream queue of ``--count`` 100-byte messages (1,000,000 by default; 100,000 with
``--quick``), published once per broker over 0-9-1 with confirms (a stream keeps its
messages, so every run reads the same backlog), read by a Trigger.AvailableNow query into
the ``noop`` sink at the source's defaults for a backlog (``queueType`` stream,
``startingOffsets`` first) with ``streamProtocol`` ``stream`` (``streamUri`` the broker's
stream port) and ``amqp``, the login given as the options ``username`` and ``password``,
in a local[2] session started beforehand. Two brokers in one run: the bundled broker in
its own process (``python -m broker --stream-port``) and RabbitMQ 4 (``rabbitmq_stream``;
``AMQP_SPARK_RABBITMQ_URL`` or a private node, testbed/rabbitmq.py).

Per broker, one untimed run of each protocol over a tenth of the backlog warms the
runner, the Python workers and the JVM up; then the two protocols alternate over
``--rounds`` rounds (two; one with ``--quick``), each round in the other order, and each
keeps its best run (load only ever slows a run down). Every run's CPU per process comes
from ``/proc`` (benchmarks/process_cpu.py): the broker, the query's source runner, the JVM
(driver and executors: one JVM in local mode), the executors' Python workers (``read()``)
and this process. Rows: rows/s and CPU-seconds per million rows of each, the stream
protocol against 0-9-1 as the reference.

``python -m benchmarks.bench_stream_protocol [--count N] [--rounds R] [--broker bundled|rabbitmq4]``
prints every run (with the load average at its start and end) and one Markdown table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import stream_brokers
from benchmarks.bench_source import _fill, _size, _source_rate
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

#: The two ways, in this order: ``streamProtocol`` values.
PROTOCOLS = ("stream", "amqp")
#: Process groups reported (``process_cpu.KINDS``, the JVM holding driver and executors).
KINDS = ("broker", "runner", "jvm", "executors", "driver")
LABELS = {
    "broker": "broker",
    "runner": "runner",
    "jvm": "JVM (driver + executors)",
    "executors": "executors' Python",
    "driver": "this process",
}


def _options(protocol: str, where: Endpoints) -> dict[str, str]:
    """The source's options (``uri`` among them, in place of ``_source_rate``'s), the login
    as ``username`` and ``password``."""
    return {
        "queueType": "stream",
        "startingOffsets": "first",
        "streamProtocol": protocol,
        **login_options(uri=where.url, streamUri=where.stream_uri),
    }


def _best_rates(
    spark: Any, where: Endpoints, count: int, rounds: int, scratch: Path, label: str
) -> dict[str, Best]:
    """Each protocol's best run over ``rounds``, the order alternating."""
    warm = max(1, count // 10)
    _fill(where.url, warm, stream=True)
    for protocol in PROTOCOLS:
        _source_rate(spark, where.url, warm, scratch, **_options(protocol, where))
    _fill(where.url, count, stream=True)

    def reading(protocol: str) -> Callable[[], float]:
        return lambda: _source_rate(spark, where.url, count, scratch, **_options(protocol, where))

    def per_million(protocol: str, seconds: dict[str, float]) -> dict[str, float]:
        return {kind: seconds[kind] * 1e6 / count for kind in KINDS}

    names = {protocol: f"streamProtocol {protocol}" for protocol in PROTOCOLS}
    runs = {protocol: reading(protocol) for protocol in PROTOCOLS}
    return best_of_rounds(runs, rounds, where, per_million, (label, names, LABELS))


def measure(
    count: int, rounds: int, only: Sequence[str] = tuple(BROKERS)
) -> dict[str, dict[str, Best]]:
    """Per broker (of ``only``), each protocol's best."""

    def on(spark: Any, where: Endpoints, scratch: Path, broker: str) -> dict[str, Best]:
        return _best_rates(spark, where, count, rounds, scratch, broker)

    return on_each_broker(on, only, "bench-stream-protocol-")


def markdown(found: dict[str, dict[str, Best]]) -> str:
    """One row per broker and protocol, then the ratios of stream to 0-9-1."""
    protocols = {protocol: protocol for protocol in PROTOCOLS}
    kinds = {kind: LABELS[kind] for kind in KINDS}
    return stream_brokers.markdown(
        found, "streamProtocol", protocols, kinds, [("stream / amqp", "stream", "amqp")]
    )


def _rows(broker: str, count: int, best: dict[str, Best]) -> list[Row]:
    what = f"stream query, {broker}: AvailableNow over {count:,} x 100 B into noop"
    ours, theirs = best["stream"], best["amqp"]
    rows = [row(f"{what}, stream protocol", "rows/s", ours.rate, theirs.rate, "AMQP 0-9-1")]
    for kind in (*KINDS, "all"):
        mine = ours.total if kind == "all" else ours.cpu.get(kind, 0.0)
        reference = theirs.total if kind == "all" else theirs.cpu.get(kind, 0.0)
        label = "all processes" if kind == "all" else LABELS[kind]
        rows.append(
            row(f"{what}: CPU per 1M rows, {label}", "CPU-s", mine, reference, "AMQP 0-9-1")
        )
    return rows


def run(quick: bool, count: int | None = None, rounds: int | None = None) -> list[Row]:
    count, rounds = _size(quick, count, rounds)
    found = measure(count, rounds)
    return [r for broker, best in found.items() for r in _rows(broker, count, best)]


if __name__ == "__main__":
    count, rounds, brokers = command_line(
        "python -m benchmarks.bench_stream_protocol", "messages in the stream", _size
    )
    print(markdown(measure(count, rounds, brokers)))
