"""The connector on a standalone Spark cluster (testbed/spark_cluster.py): a driver
application whose executors run in JVMs of their own, with Python workers of their own, as
on a real cluster; against the bundled broker and RabbitMQ 4. Each test also checks that the
executors ran the tasks (Spark's monitoring API counts them per executor)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.spark.conftest import Broker
from tests.spark.inputs import bodies, classic_options, stream_options
from tests.spark_cluster import cluster_driver
from tests.spark_cluster.cluster_driver import ClusterDriver
from tests.spark_cluster.conftest import taken_bodies

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def tasks_since(driver: ClusterDriver, before: dict[str, int]) -> dict[str, int]:
    """Tasks each executor ran since ``before`` (a ``cluster_driver.tasks()`` answer)."""
    now = driver.call(cluster_driver.tasks)
    return {executor: count - before.get(executor, 0) for executor, count in now.items()}


def test_classic_queue_stream_on_a_cluster_reads_every_message_once_and_acks_them(
    broker: Broker, driver: ClusterDriver, tmp_path: Path
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(600))
    before = driver.call(cluster_driver.tasks)

    rows = driver.call(
        cluster_driver.read_available_now,
        classic_options(broker, queue, maxMessagesPerTrigger="200", rowsPerPartition="50"),
        str(tmp_path / "ck"),
    )

    assert sorted(body for body, _offset in rows) == bodies(600)
    assert sum(tasks_since(driver, before).values()) > 0, "no executor ran a task"
    # The run's end closes the source's connection, so anything it left unacked would be
    # back in the queue once the queue has no consumer.
    declared = broker.ch.queue_declare(queue, passive=True)
    assert (declared.consumer_count, declared.message_count) == (0, 0)


def test_stream_queue_stream_on_a_cluster_reads_every_offset_once_on_every_executor(
    broker: Broker, driver: ClusterDriver, stream_queue: str, tmp_path: Path
) -> None:
    broker.publish(stream_queue, bodies(600))
    before = driver.call(cluster_driver.tasks)
    options = stream_options(
        broker,
        stream_queue,
        startingOffsets="first",
        maxMessagesPerTrigger="300",
        rowsPerPartition="50",
    )

    rows = driver.call(cluster_driver.read_available_now, options, str(tmp_path / "ck"))

    assert sorted((offset, body) for body, offset in rows) == list(enumerate(bodies(600)))
    ran = tasks_since(driver, before)
    assert len(ran) == 2 and all(count > 0 for count in ran.values()), (
        f"each executor should have read offset ranges (12 tasks): {ran}"
    )


def test_batch_write_on_a_cluster_routes_every_row_through_the_exchange(
    broker: Broker, driver: ClusterDriver
) -> None:
    exchange = f"cluster-{uuid.uuid4().hex[:8]}"
    broker.ch.exchange_declare(exchange, "topic", auto_delete=True)  # gone with its binding
    target = broker.new_queue()
    broker.ch.queue_bind(target, exchange, "orders.#")
    rows = [(body, f"orders.{i % 3}") for i, body in enumerate(bodies(300))]
    before = driver.call(cluster_driver.tasks)

    driver.call(
        cluster_driver.write_batch,
        rows,
        "body binary, routing_key string",
        {"uri": broker.url, "exchange": exchange},
    )

    assert sum(tasks_since(driver, before).values()) > 0, "no executor ran a task"
    assert broker.wait_ready(target, 300) == 300
    assert taken_bodies(broker, target) == bodies(300)
