"""Client throughput on the bundled broker and on a real RabbitMQ: our blocking client vs
pika's BlockingConnection, and vs the broker's own ceiling.

100-byte bodies to the default exchange, one queue per figure; per broker:

* publish with confirms: ours pipelines (``max_in_flight`` 1000, then ``wait_for_confirms``);
  pika's blocking channel in confirm mode waits for each confirm (its only blocking mode).
* batch publish with confirms: ours ``basic_publish_batch`` of 1000 messages per write with
  ``max_in_flight`` 5000, as the sink publishes (a batch waits until it fits, so a window of
  one batch would be stop-and-wait). Reference: what the broker allows, a raw pipelined
  client on the protocol layer alone (``bench_broker.Client``: 500 publishes per write, 5000
  in flight, no threads, no locks, no bookkeeping); our client cannot publish faster than
  the broker confirms.
* consume: a pre-filled queue drained with prefetch 1000, acking every 100th delivery with
  ``multiple`` (ours ``next_delivery``/``drain_deliveries``, pika ``channel.consume()``).
* client CPU per message of the publish and consume figures (user + system time of the
  whole process, the I/O thread included): what the client costs, whatever the broker and
  the machine's load make of the wall-clock rates.

Ours and the references alternate ``ROUNDS`` times; each keeps its best (the machine may be
shared: load only ever slows a run down). The bundled broker runs as its own process
(``python -m broker``), as RabbitMQ does. RabbitMQ comes from ``AMQP_SPARK_RABBITMQ_URL`` or
a private node (testbed/rabbitmq.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pika

from amqp_protocol import SPEC_0_9_1
from amqp_spark.client import Channel, connect, parse_url
from benchmarks.bench_broker import Client as RawClient
from benchmarks.bench_broker import bundled_broker
from benchmarks.common import Row, row
from testbed.rabbitmq import rabbitmq

BODY = bytes(range(100))
PREFETCH = 1000
ACK_EVERY = 100
BATCH = 1000
BATCH_IN_FLIGHT = 5000
ROUNDS = 2
PIKA = "pika BlockingConnection"
CEILING = "raw pipelined client on the protocol layer"

#: Measured per round: a rate (msg/s, the best is the highest) or a CPU cost (µs/msg, the
#: best is the lowest).
Figures = dict[str, float]


def _timed(action: Callable[[], None], messages: int) -> tuple[float, float]:
    """(messages per second, client CPU microseconds per message) of ``action``."""
    start, cpu = time.perf_counter(), time.process_time()
    action()
    elapsed, cpu_used = time.perf_counter() - start, time.process_time() - cpu
    return messages / elapsed, cpu_used / messages * 1e6


def _fill(channel: Channel, queue: str, messages: int) -> None:
    channel.confirm_select()
    for start in range(0, messages, BATCH):
        count = min(BATCH, messages - start)
        channel.basic_publish_batch("", [(queue, BODY, None)] * count)
    channel.wait_for_confirms(timeout=300)


def _ours(url: str, messages: int) -> Figures:
    figures: Figures = {}
    with connect(url) as conn:
        with conn.channel() as ch:
            queue = ch.queue_declare("", exclusive=True).queue
            ch.confirm_select()

            def publish() -> None:
                for _ in range(messages):
                    ch.basic_publish("", queue, BODY)
                ch.wait_for_confirms(timeout=300)

            figures["publish"], figures["publish cpu"] = _timed(publish, messages)
            ch.queue_purge(queue)
            ch.max_in_flight = BATCH_IN_FLIGHT

            def publish_batches() -> None:
                for start in range(0, messages, BATCH):
                    count = min(BATCH, messages - start)
                    ch.basic_publish_batch("", [(queue, BODY, None)] * count)
                ch.wait_for_confirms(timeout=300)

            figures["batch"], figures["batch cpu"] = _timed(publish_batches, messages)
        with conn.channel() as ch:
            queue = ch.queue_declare("", exclusive=True).queue
            _fill(ch, queue, messages)
            ch.basic_qos(prefetch_count=PREFETCH)

            def consume() -> None:
                ch.basic_consume(queue)
                received = 0
                while received < messages:
                    batch = ch.drain_deliveries(PREFETCH)
                    if not batch:
                        first = ch.next_delivery(timeout=10)
                        if first is None:
                            raise TimeoutError(f"consumed {received} of {messages}")
                        batch = [first]
                    for d in batch:
                        received += 1
                        if received % ACK_EVERY == 0 or received == messages:
                            ch.basic_ack(d.delivery_tag, multiple=True)

            figures["consume"], figures["consume cpu"] = _timed(consume, messages)
    return figures


def _pika(url: str, messages: int) -> Figures:
    figures: Figures = {}
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        queue = ch.queue_declare("", exclusive=True).method.queue
        ch.confirm_delivery()

        def publish() -> None:
            for _ in range(messages):
                ch.basic_publish("", queue, BODY)

        figures["pika publish"], _ = _timed(publish, messages)
        ch.queue_purge(queue)
        ch.basic_qos(prefetch_count=PREFETCH)

        def consume() -> None:
            deliveries = ch.consume(queue, inactivity_timeout=10)
            for received, (method, _props, _body) in enumerate(deliveries, start=1):
                if method is None:
                    raise TimeoutError(f"consumed {received - 1} of {messages}")
                if received % ACK_EVERY == 0 or received == messages:
                    ch.basic_ack(method.delivery_tag, multiple=True)
                if received == messages:
                    break
            ch.cancel()

        with connect(url) as ours, ours.channel() as filler:
            _fill(filler, queue, messages)
        figures["pika consume"], _ = _timed(consume, messages)
    finally:
        conn.close()
    return figures


def _ceiling(url: str, messages: int) -> Figures:
    params = parse_url(url)
    raw = RawClient(params.host, params.port)
    queue = "bench-client-ceiling"
    try:
        raw.setup([queue])
        rate, _ = _timed(lambda: raw.publish([queue], messages, True), messages)
        raw.call(SPEC_0_9_1.method("queue.delete")(queue=queue), "queue.delete-ok")
    finally:
        raw.close()
    return {"ceiling": rate}


def _best(url: str, messages: int) -> Figures:
    best: Figures = {}
    for _ in range(ROUNDS):
        for measure in (_ours, _pika, _ceiling):
            for name, value in measure(url, messages).items():
                keep = min if name.endswith("cpu") else max
                best[name] = keep(best.get(name, value), value)
    return best


def _rows(figures: Figures, label: str) -> list[Row]:
    return [
        row(
            f"client publish with confirms ({label})",
            "msg/s",
            figures["publish"],
            figures["pika publish"],
            PIKA,
        ),
        row(
            f"client batch publish with confirms, {BATCH}/write, {BATCH_IN_FLIGHT} in flight "
            f"({label})",
            "msg/s",
            figures["batch"],
            figures["ceiling"],
            CEILING,
        ),
        row(
            f"client CPU per message, publish with confirms ({label})", "µs", figures["publish cpu"]
        ),
        row(
            f"client CPU per message, batch publish with confirms ({label})",
            "µs",
            figures["batch cpu"],
        ),
        row(
            f"client consume, prefetch {PREFETCH} ({label})",
            "msg/s",
            figures["consume"],
            figures["pika consume"],
            PIKA,
        ),
        row(f"client CPU per message, consume ({label})", "µs", figures["consume cpu"]),
    ]


def run(quick: bool) -> list[Row]:
    messages = 10_000 if quick else 100_000
    size = f"{messages:,} x 100 B"
    with bundled_broker() as (host, port):
        bundled = _best(f"amqp://guest:guest@{host}:{port}/%2F", messages)
    with rabbitmq() as url:
        rabbit = _best(url, messages)
    return _rows(bundled, f"{size}, bundled broker") + _rows(rabbit, f"{size}, RabbitMQ")
