"""What the stream benchmarks (``bench_stream_protocol``, ``bench_stream_sink``) share: the
two brokers they run on side by side (the bundled broker in its own process with its
stream-protocol listener, and RabbitMQ 4 with ``rabbitmq_stream``), one ``local[2]`` session
for both, each contender's best run over rotating rounds, their Markdown table and their
command line."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from amqp_spark.datasource import AMQPDataSource
from benchmarks.bench_source import _load
from benchmarks.process_cpu import ProcessCPU, rabbitmq_node_pid
from testbed.broker_process import BrokerProcess
from testbed.ports import free_port
from testbed.rabbitmq import rabbitmq, stream_uri_of
from testbed.spark import local_session


@dataclass(frozen=True)
class Endpoints:
    url: str
    stream_uri: str


@dataclass
class Best:
    """A contender's best run: rows/s and CPU-seconds per million rows by process group."""

    rate: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


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

#: ``measure(spark, where, scratch, broker's label)``: each contender's best on one broker.
Measure = Callable[[Any, Endpoints, Path, str], dict[str, Best]]


def on_each_broker(
    measure: Measure, only: Sequence[str], prefix: str
) -> dict[str, dict[str, Best]]:
    """``measure`` on each broker of ``only`` in turn, in one ``local[2]`` session with the
    connector registered (its scratch directory named ``prefix``...); by broker label."""
    found: dict[str, dict[str, Best]] = {}
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            for name in BROKERS:
                if name not in only:
                    continue
                broker, start = BROKERS[name]
                with start() as where:
                    found[broker] = measure(spark, where, Path(scratch), broker)
        finally:
            spark.stop()
    return found


def best_of_rounds(
    runs: Mapping[str, Callable[[], float]],
    rounds: int,
    where: Endpoints,
    per_million: Callable[[str, dict[str, float]], dict[str, float]],
    labels: tuple[str, Mapping[str, str], Mapping[str, str]],
) -> dict[str, Best]:
    """Each contender's best run over ``rounds``, the order rotating from round to round
    (load only ever slows a run down). ``runs``: contender -> one run, returning rows/s;
    ``per_million(contender, seconds)``: the run's CPU-seconds by ``process_cpu`` kind as
    CPU-seconds per million rows by process group. Every run is printed with the load
    average at its start and end; ``labels``: the broker's, the contenders' and the groups'."""
    broker, names, groups = labels
    port = urlsplit(where.url).port
    broker_pid = rabbitmq_node_pid(port) if port is not None else None
    order = list(runs)
    best = {contender: Best() for contender in order}
    for i in range(rounds):
        for contender in order[i % len(order) :] + order[: i % len(order)]:
            load = _load()
            with ProcessCPU(broker_pid) as cpu:
                rate = runs[contender]()
            cpu_per_million = per_million(contender, cpu.seconds)
            print(
                f"{broker}: {names[contender]}: {rate:,.0f} rows/s; CPU-s per 1M rows "
                + ", ".join(f"{groups[g]} {v:.2f}" for g, v in cpu_per_million.items())
                + f"; load {load}-{_load()}",
                file=sys.stderr,
                flush=True,
            )
            if rate > best[contender].rate:
                best[contender] = Best(rate, cpu_per_million)
    return best


def ratio(ours: float | None, theirs: float | None) -> str:
    """``ours / theirs`` for a table, ``-`` where either is missing or ``theirs`` is 0."""
    return f"{ours / theirs:.2f}x" if ours is not None and theirs else "-"


def markdown(
    found: dict[str, dict[str, Best]],
    kind: str,
    contenders: Mapping[str, str],
    groups: Mapping[str, str],
    ratios: Sequence[tuple[str, str, str]],
) -> str:
    """One table: per broker, a row per contender (``contenders``: key -> label, under the
    heading ``kind``) with its rows/s and CPU-s per million rows by process group
    (``groups``: key -> heading; "-" where a contender has none), then a row per ratio
    (label, contender, reference)."""
    lines = [
        f"| broker | {kind} | rows/s | CPU-s per 1M rows: "
        + " | ".join(groups.values())
        + " | all |",
        "| --- | --- | --- | " + " | ".join("---" for _ in groups) + " | --- |",
    ]
    for broker, best in found.items():
        for contender, label in contenders.items():
            b = best[contender]
            lines.append(
                f"| {broker} | {label} | {b.rate:,.0f} | "
                + " | ".join(f"{b.cpu[g]:.2f}" if g in b.cpu else "-" for g in groups)
                + f" | {b.total:.2f} |"
            )
        for label, mine, theirs in ratios:
            ours, reference = best[mine], best[theirs]
            lines.append(
                f"| {broker} | {label} | {ratio(ours.rate, reference.rate)} | "
                + " | ".join(ratio(ours.cpu.get(g), reference.cpu.get(g)) for g in groups)
                + f" | {ratio(ours.total, reference.total)} |"
            )
    return "\n".join(lines)


def command_line(
    prog: str, what_count: str, size: Callable[[bool, int | None, int | None], tuple[int, int]]
) -> tuple[int, int, tuple[str, ...]]:
    """The size (``size(quick, count, rounds)``) and the brokers a stream benchmark's command
    line asks for: ``[--quick] [--count N] [--rounds R] [--broker NAME ...]``."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--count", type=int, help=what_count)
    parser.add_argument("--rounds", type=int, help="rounds (each contender once a round)")
    parser.add_argument(
        "--broker", action="append", choices=tuple(BROKERS), help="only this broker (repeatable)"
    )
    args = parser.parse_args()
    count, rounds = size(args.quick, args.count, args.rounds)
    return count, rounds, tuple(args.broker or BROKERS)
