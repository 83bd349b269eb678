"""What a broker spends per message on the classic source's consumption pattern, without Spark.

The source holds a window of deliveries unacked and acks half of it at once (``multiple``)
when Spark commits a batch; the broker's CPU per message depends on how that window is
held (issue 22: RabbitMQ 4 pays per message for what it holds unacked). This replays the
pattern with our client alone, in this process, for several shapes of the window:

* ``per-consumer``: ``basic.qos`` before each ``basic.consume`` (the source's way: several
  consumers of at most 65535 on one channel, sharing its delivery tags);
* ``global``: one ``basic.qos global=true`` of the whole window on the channel, shared by
  its consumers (RabbitMQ 3.3+ semantics; a deprecated feature in RabbitMQ 4);
* the window spread over several channels;
* one consumer acked every 20,000 or 10,000 deliveries instead of half the window once it is
  full (RabbitMQ's cost follows what one ack frees);

and the raw client's pattern (prefetch 65535, an ack every 10,000) as the reference.
Each shape reads the same refilled backlog of 100 B messages; the shapes alternate over
rounds. Printed per run: msgs/s, the broker's and this process's CPU in µs per message, the
load average. ``python -m benchmarks.consume_pattern --broker rabbitmq4 --count 200000
--rounds 2``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from amqp_spark.client import Channel, connect
from benchmarks.bench_source import QUEUE, _bundled, _fill
from benchmarks.process_cpu import ProcessCPU, rabbitmq_node_pid
from testbed.rabbitmq import rabbitmq

_BROKERS = {
    "rabbitmq4": lambda: rabbitmq(4),
    "rabbitmq3": lambda: rabbitmq(3),
    "bundled": _bundled,
}


@dataclass(frozen=True)
class Shape:
    """A way to hold unacked deliveries: ``channels`` channels, each with consumers of
    ``prefetches`` (per consumer, or with ``global_qos`` their sum as one channel-wide
    limit). ``ack_every`` acks each that many deliveries instead of half the window once
    it is full."""

    name: str
    prefetches: tuple[int, ...]
    channels: int = 1
    global_qos: bool = False
    ack_every: int | None = None

    @property
    def per_channel(self) -> int:
        return sum(self.prefetches)

    def start(self, ch: Channel) -> None:
        if self.global_qos:
            ch.basic_qos(prefetch_count=self.per_channel, global_=True)
        for prefetch in self.prefetches:
            if not self.global_qos:
                ch.basic_qos(prefetch_count=prefetch)
            ch.basic_consume(QUEUE)


SHAPES = [
    Shape("raw client: prefetch 65535, ack every 10000", (65535,), ack_every=10_000),
    Shape("20000, 1 consumer", (20_000,)),
    Shape("40000, 1 consumer", (40_000,)),
    Shape("40000 as five consumers: 1+15+240+3840+35904", (1, 15, 240, 3840, 35904)),
    Shape("40000, 2 consumers of 20000", (20_000, 20_000)),
    Shape("40000, global qos, 1 consumer", (40_000,), global_qos=True),
    Shape("40000, global qos, 2 consumers", (20_000, 20_000), global_qos=True),
    Shape("40000, 2 channels of 20000", (20_000,), channels=2),
    Shape("131070, 2 consumers of 65535", (65535, 65535)),
    Shape(
        "131070 as six consumers: 1+15+240+3840+61440+65534",
        (1, 15, 240, 3840, 61440, 65534),
    ),
    # RabbitMQ's cost follows what one ack frees (docs/measurements/classic-source.md, sixth
    # pass): the same windows acked in steps of 20000 and of 10000.
    Shape("40000, 1 consumer, ack every 20000", (40_000,), ack_every=20_000),
    Shape("65535, 1 consumer, ack every 20000", (65535,), ack_every=20_000),
    Shape("40000, 1 consumer, ack every 10000", (40_000,), ack_every=10_000),
    Shape("20000, 1 consumer, ack every 10000", (20_000,), ack_every=10_000),
]


def consume(url: str, shape: Shape, count: int) -> float:
    """Read ``count`` messages holding them as ``shape`` says; the rate in msgs/s."""
    with connect(url) as conn:
        channels = [conn.channel() for _ in range(shape.channels)]
        per_channel = shape.per_channel
        # The source's pattern: once the window is full, its older half is acked at once.
        threshold = shape.ack_every or per_channel
        start = time.perf_counter()
        for ch in channels:
            shape.start(ch)
        received = [0] * len(channels)  # tags are consecutive on a fresh channel
        acked = [0] * len(channels)
        deadline = start + 600
        while sum(received) < count:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{shape.name}: stalled after {sum(received)} of {count}")
            arrived = 0
            for i, ch in enumerate(channels):
                got = len(ch.drain_deliveries(max_count=65535))
                received[i] += got
                arrived += got
                if received[i] - acked[i] >= threshold:
                    tag = received[i] if shape.ack_every else acked[i] + per_channel // 2
                    ch.basic_ack(tag, multiple=True)
                    acked[i] = tag
            if not arrived:
                time.sleep(0.001)
        for i, ch in enumerate(channels):
            if received[i] > acked[i]:
                ch.basic_ack(received[i], multiple=True)
        return count / (time.perf_counter() - start)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


@contextlib.contextmanager
def _broker(name: str) -> Iterator[str]:
    with _BROKERS[name]() as url:
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.consume_pattern")
    parser.add_argument("--broker", choices=sorted(_BROKERS), default="rabbitmq4")
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="shape numbers (0-based) to run")
    args = parser.parse_args()
    shapes = [SHAPES[int(i)] for i in args.only] if args.only else SHAPES
    with _broker(args.broker) as url:
        port = urlsplit(url).port
        broker_pid = rabbitmq_node_pid(port) if port is not None else None
        for r in range(args.rounds):
            order = shapes[r % len(shapes) :] + shapes[: r % len(shapes)]
            for shape in order:
                _fill(url, args.count)
                load = _load()
                with ProcessCPU(broker_pid) as cpu:
                    rate = consume(url, shape, args.count)
                us = {k: v * 1e6 / args.count for k, v in cpu.seconds.items()}
                print(
                    f"{args.broker} round {r + 1}: {shape.name}: {rate:,.0f} msgs/s; "
                    f"broker {us['broker']:.1f} µs/msg, client {us['driver']:.1f}; "
                    f"load {load}-{_load()}",
                    file=sys.stderr,
                    flush=True,
                )


if __name__ == "__main__":
    main()
