"""Fixtures of the tests on a standalone Spark cluster: the cluster (a master and two
workers, once a session), the driver application on it (once a module, in a child process)
and the brokers the connector reads and writes (the bundled broker and RabbitMQ 4)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.spark_cluster import SparkCluster
from tests.spark.conftest import Broker, broker, stream_queue
from tests.spark_cluster.cluster_driver import ClusterDriver
from tests.support import fixtures

__all__ = ["broker", "broker_url", "cluster", "driver", "stream_queue"]  # fixtures

#: Executors of each application on the cluster: one per worker.
EXECUTORS = 2


@pytest.fixture(params=fixtures.broker_params("bundled", "rabbitmq"))
def broker_url(request: pytest.FixtureRequest) -> str:
    """The bundled broker and RabbitMQ 4: ``test_x[bundled]``, ``test_x[rabbitmq]``."""
    return fixtures.broker_url_of(request)


@pytest.fixture(scope="session")
def cluster() -> Iterator[SparkCluster]:
    """A master and two workers on 127.0.0.1. Each worker offers two cores, so the module's
    driver application (one executor of one core per worker) and a spark-submit job can run
    at once."""
    with SparkCluster(workers=EXECUTORS, cores=2) as started:
        yield started


@pytest.fixture(scope="module")
def driver(
    cluster: SparkCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterDriver]:
    started = ClusterDriver(cluster.master_url, tmp_path_factory.mktemp("driver"), EXECUTORS)
    try:
        assert len(started.executors) == EXECUTORS, f"executors: {started.executors}"
        yield started
    finally:
        started.close()


def taken_bodies(broker: Broker, queue: str) -> list[bytes]:
    """The sorted bodies of every message in ``queue``, taken with basic.get."""
    taken = []
    while (delivery := broker.ch.basic_get(queue, no_ack=True)) is not None:
        taken.append(delivery.body)
    return sorted(taken)
