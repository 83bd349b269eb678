"""``spark.read.format("amqp")`` over classic queues: a peek that requeues by default, a
consuming read with ``ackBatchReads``; errors at ``load()``."""

from __future__ import annotations

import pytest
from pyspark.sql import Row, SparkSession

from tests.spark.conftest import Broker

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BODIES = [f"b{i:03d}".encode() for i in range(15)]


def read_rows(spark: SparkSession, broker: Broker, queue: str, **extra: str) -> list[Row]:
    df = spark.read.format("amqp").option("uri", broker.url).option("queue", queue)
    return sorted(df.options(**extra).load().collect(), key=lambda r: r.body)


def read(spark: SparkSession, broker: Broker, queue: str, **extra: str) -> list[bytes]:
    return [r.body for r in read_rows(spark, broker, queue, **extra)]


def test_batch_read_requeues_what_it_read_by_default(
    broker: Broker, amqp_spark: SparkSession
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, BODIES)

    first = read_rows(amqp_spark, broker, queue)
    assert broker.wait_ready(queue, 15) == 15
    again = read_rows(amqp_spark, broker, queue)

    assert [(r.body, r.redelivered) for r in first] == [(b, False) for b in BODIES]
    assert [(r.body, r.redelivered) for r in again] == [(b, True) for b in BODIES]


def test_batch_read_with_ack_consumes_what_it_read(
    broker: Broker, amqp_spark: SparkSession
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, BODIES)

    assert (
        read(amqp_spark, broker, queue, ackBatchReads="true", maxMessagesPerTrigger="10")
        == (BODIES[:10])
    )
    assert broker.wait_ready(queue, 5) == 5
    assert read(amqp_spark, broker, queue, ackBatchReads="true") == BODIES[10:]
    assert broker.wait_ready(queue, 0) == 0


@pytest.mark.parametrize("queue_type", ["classic", "stream"])
def test_batch_read_of_a_missing_queue_names_option_and_queue(
    broker: Broker, amqp_spark: SparkSession, queue_type: str
) -> None:
    with pytest.raises(Exception, match="amqp option 'queue': got 'no-such-queue'"):
        read(amqp_spark, broker, "no-such-queue", queueType=queue_type)


def test_bad_option_fails_at_load(amqp_spark: SparkSession) -> None:
    reader = amqp_spark.read.format("amqp").option("uri", "amqp://127.0.0.1")
    with pytest.raises(Exception, match="exactly one of 'queue'"):
        reader.load()
