"""The benchmark's trivial source that consumes the queue (``benchmarks/consuming_floor.py``)
consumes as the source does: a batch is half the source's default window for the broker,
acked when Spark commits it, and the run's last batch, which Spark commits only in a next
run, goes back to the queue when the runner ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from amqp_spark.source.classic.window import window_messages_for
from benchmarks.bench_source import available_now_rate
from benchmarks.consuming_floor import ConsumingFloor
from tests.spark.conftest import Broker
from tests.support import fixtures

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 70_000


@pytest.mark.parametrize("broker_url", fixtures.broker_params("bundled", "rabbitmq"), indirect=True)
def test_the_consuming_floor_acks_each_committed_batch_of_half_the_default_window(
    broker: Broker, amqp_spark: SparkSession, tmp_path: Path
) -> None:
    batch = window_messages_for(broker.conn.server_properties) // 2  # 65535; 20000 on RabbitMQ
    last_batch = ROWS % batch
    queue = broker.new_queue()
    for _ in range(ROWS // 1000):
        broker.ch.basic_publish_batch("", [(queue, b"m", None)] * 1000)
    broker.ch.wait_for_confirms(timeout=60)
    amqp_spark.dataSource.register(ConsumingFloor)
    df = (
        amqp_spark.readStream.format(ConsumingFloor.name())
        .options(rows=str(ROWS), uri=broker.url, queue=queue)
        .load()
    )
    assert available_now_rate(df, ROWS, tmp_path) > 0
    assert broker.wait_ready(queue, last_batch) == last_batch
