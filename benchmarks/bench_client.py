"""Client throughput against a real RabbitMQ: our blocking client vs pika's BlockingConnection.

100-byte bodies to the default exchange, one exclusive queue per figure:

* publish with confirms: ours pipelines (``max_in_flight`` 1000, then ``wait_for_confirms``);
  pika's blocking channel in confirm mode waits for each confirm (its only blocking mode).
* batch publish with confirms: ours ``basic_publish_batch`` of 1000 messages per write.
* consume: a pre-filled queue drained with prefetch 1000, acking every 100th delivery with
  ``multiple`` (ours ``next_delivery``/``drain_deliveries``, pika ``channel.consume()``).

RabbitMQ comes from ``AMQP_SPARK_RABBITMQ_URL`` or a private node (tests/support/rabbitmq.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pika

from amqp_spark.client import Channel, connect
from benchmarks.common import Row, row
from tests.support.rabbitmq import rabbitmq

BODY = bytes(range(100))
PREFETCH = 1000
ACK_EVERY = 100
BATCH = 1000
PIKA = "pika BlockingConnection"


def _timed(action: Callable[[], None], messages: int) -> float:
    start = time.perf_counter()
    action()
    return messages / (time.perf_counter() - start)


def _fill(channel: Channel, queue: str, messages: int) -> None:
    channel.confirm_select()
    for start in range(0, messages, BATCH):
        count = min(BATCH, messages - start)
        channel.basic_publish_batch("", [(queue, BODY, None)] * count)
    channel.wait_for_confirms(timeout=300)


def _ours(url: str, messages: int) -> dict[str, float]:
    rates = {}
    with connect(url) as conn:
        with conn.channel() as ch:
            queue = ch.queue_declare("", exclusive=True).queue
            ch.confirm_select()

            def publish() -> None:
                for _ in range(messages):
                    ch.basic_publish("", queue, BODY)
                ch.wait_for_confirms(timeout=300)

            rates["publish"] = _timed(publish, messages)
            ch.queue_purge(queue)

            def publish_batches() -> None:
                for start in range(0, messages, BATCH):
                    count = min(BATCH, messages - start)
                    ch.basic_publish_batch("", [(queue, BODY, None)] * count)
                ch.wait_for_confirms(timeout=300)

            rates["batch"] = _timed(publish_batches, messages)
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

            rates["consume"] = _timed(consume, messages)
    return rates


def _pika(url: str, messages: int) -> dict[str, float]:
    rates = {}
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        queue = ch.queue_declare("", exclusive=True).method.queue
        ch.confirm_delivery()

        def publish() -> None:
            for _ in range(messages):
                ch.basic_publish("", queue, BODY)

        rates["publish"] = _timed(publish, messages)
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
        rates["consume"] = _timed(consume, messages)
    finally:
        conn.close()
    return rates


def run(quick: bool) -> list[Row]:
    messages = 10_000 if quick else 100_000
    with rabbitmq() as url:
        ours = _ours(url, messages)
        ref = _pika(url, messages)
    label = f"{messages:,} x 100 B, RabbitMQ"
    return [
        row(
            f"client publish with confirms ({label})",
            "msg/s",
            ours["publish"],
            ref["publish"],
            PIKA,
        ),
        row(
            f"client batch publish with confirms, {BATCH}/write ({label})",
            "msg/s",
            ours["batch"],
            ref["publish"],
            f"{PIKA} (per message)",
        ),
        row(
            f"client consume, prefetch {PREFETCH} ({label})",
            "msg/s",
            ours["consume"],
            ref["consume"],
            PIKA,
        ),
    ]
