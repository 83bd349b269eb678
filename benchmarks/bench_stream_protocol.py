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

import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from amqp_spark.datasource import AMQPDataSource
from benchmarks.bench_source import _fill, _load, _size, _source_rate
from benchmarks.common import Row, row
from benchmarks.login import login_options
from benchmarks.process_cpu import ProcessCPU, rabbitmq_node_pid
from testbed.broker_process import BrokerProcess
from testbed.rabbitmq import free_port, rabbitmq, stream_uri_of
from testbed.spark import local_session

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


@dataclass
class Best:
    rate: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.cpu.get(k, 0.0) for k in KINDS)


@dataclass(frozen=True)
class Endpoints:
    url: str
    stream_uri: str


@contextlib.contextmanager
def _bundled() -> Iterator[Endpoints]:
    stream_port = free_port()
    with BrokerProcess(None, "--log-level", "WARNING", "--stream-port", str(stream_port)) as b:
        yield Endpoints(b.url, f"rabbitmq-stream://guest:guest@127.0.0.1:{stream_port}/%2F")


@contextlib.contextmanager
def _rabbitmq4() -> Iterator[Endpoints]:
    with rabbitmq(4) as url:
        yield Endpoints(url, stream_uri_of(url))


#: The brokers measured, in this order, by their ``--broker`` names.
BROKERS: dict[str, tuple[str, Callable[[], contextlib.AbstractContextManager[Endpoints]]]] = {
    "bundled": ("bundled broker", _bundled),
    "rabbitmq4": ("RabbitMQ 4", _rabbitmq4),
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
    port = urlsplit(where.url).port
    broker_pid = rabbitmq_node_pid(port) if port is not None else None
    warm = max(1, count // 10)
    _fill(where.url, warm, stream=True)
    for protocol in PROTOCOLS:
        _source_rate(spark, where.url, warm, scratch, **_options(protocol, where))
    _fill(where.url, count, stream=True)
    best = {protocol: Best() for protocol in PROTOCOLS}
    for i in range(rounds):
        for protocol in PROTOCOLS[i % 2 :] + PROTOCOLS[: i % 2]:
            load = _load()
            with ProcessCPU(broker_pid) as cpu:
                rate = _source_rate(spark, where.url, count, scratch, **_options(protocol, where))
            per_million = {k: v * 1e6 / count for k, v in cpu.seconds.items()}
            print(
                f"{label}: streamProtocol {protocol}: {rate:,.0f} rows/s; CPU-s per 1M rows "
                + ", ".join(f"{LABELS[k]} {per_million[k]:.2f}" for k in KINDS)
                + f"; load {load}-{_load()}",
                file=sys.stderr,
                flush=True,
            )
            if rate > best[protocol].rate:
                best[protocol] = Best(rate, per_million)
    return best


def measure(
    count: int, rounds: int, only: Sequence[str] = tuple(BROKERS)
) -> dict[str, dict[str, Best]]:
    """Per broker (of ``only``), each protocol's best."""
    found: dict[str, dict[str, Best]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-stream-protocol-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            for name in BROKERS:
                if name not in only:
                    continue
                broker, start = BROKERS[name]
                with start() as where:
                    found[broker] = _best_rates(spark, where, count, rounds, Path(scratch), broker)
        finally:
            spark.stop()
    return found


def markdown(found: dict[str, dict[str, Best]]) -> str:
    """One row per broker and protocol, then the ratios of stream to 0-9-1."""
    lines = [
        "| broker | streamProtocol | rows/s | CPU-s per 1M rows: "
        + " | ".join(LABELS[k] for k in KINDS)
        + " | all |",
        "| --- | --- | --- | " + " | ".join("---" for _ in KINDS) + " | --- |",
    ]
    for broker, best in found.items():
        for protocol in PROTOCOLS:
            b = best[protocol]
            lines.append(
                f"| {broker} | {protocol} | {b.rate:,.0f} | "
                + " | ".join(f"{b.cpu.get(k, 0.0):.2f}" for k in KINDS)
                + f" | {b.total:.2f} |"
            )
        ours, theirs = best["stream"], best["amqp"]
        lines.append(
            f"| {broker} | stream / amqp | {_ratio(ours.rate, theirs.rate)} | "
            + " | ".join(_ratio(ours.cpu.get(k, 0.0), theirs.cpu.get(k, 0.0)) for k in KINDS)
            + f" | {_ratio(ours.total, theirs.total)} |"
        )
    return "\n".join(lines)


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs else "-"


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
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_stream_protocol")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--count", type=int, help="messages in the stream")
    parser.add_argument("--rounds", type=int, help="rounds (each protocol once a round)")
    parser.add_argument(
        "--broker", action="append", choices=tuple(BROKERS), help="only this broker (repeatable)"
    )
    args = parser.parse_args()
    count, rounds = _size(args.quick, args.count, args.rounds)
    found = measure(count, rounds, tuple(args.broker or BROKERS))
    print(markdown(found))
