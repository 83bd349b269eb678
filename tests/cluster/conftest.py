"""The RabbitMQ 4 cluster of the cluster tests: three private nodes formed once a session
(see tests/support/rabbitmq_cluster.py), every node running again after each test. And, for
the tests that need no cluster, two "nodes" that are proxies of the bundled broker."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence

import pytest

from amqp_spark.client import Channel, connect
from testbed.rabbitmq import (
    STREAM_PLUGIN,
    RabbitMQUnavailable,
    find_rabbitmq,
    missing_rabbitmq,
)
from tests.spark.recording_proxy import RecordingProxy
from tests.support import fixtures
from tests.support.rabbitmq_cluster import RabbitMQCluster


def formed_cluster() -> Iterator[RabbitMQCluster]:
    """A new three-node cluster, every node serving the stream protocol too. When none can
    be formed the tests that need it fail in CI and skip elsewhere, with the reason."""
    install = find_rabbitmq(4)
    if install is None:
        fixtures._fail_in_ci_else_skip(f"no RabbitMQ cluster: {missing_rabbitmq(4)}")
    cluster = RabbitMQCluster(install, plugins=(STREAM_PLUGIN,))
    try:
        cluster.start()
    except RabbitMQUnavailable as e:
        fixtures._fail_in_ci_else_skip(f"no RabbitMQ cluster: {e}")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def session_cluster() -> Iterator[RabbitMQCluster]:
    """The session's cluster (``formed_cluster``)."""
    yield from formed_cluster()


@pytest.fixture
def rabbitmq_cluster(session_cluster: RabbitMQCluster) -> Iterator[RabbitMQCluster]:
    """The session's cluster, whole: a node the test killed is started again after it."""
    yield session_cluster
    session_cluster.revive_killed()


@pytest.fixture
def node_proxies(bundled_broker_url: str) -> Iterator[tuple[RecordingProxy, RecordingProxy]]:
    """Two "nodes": proxies of the bundled broker; closing one plays its node dying (its
    connections end, new ones are refused)."""
    with RecordingProxy(bundled_broker_url) as first, RecordingProxy(bundled_broker_url) as second:
        yield first, second


def port_of(proxy: RecordingProxy) -> int:
    return int(proxy.url.rsplit(":", 1)[1].split("/")[0])


def addresses_of(*ports: int) -> str:
    """The ``addresses`` option naming ``ports`` of 127.0.0.1."""
    return ",".join(f"127.0.0.1:{port}" for port in ports)


@contextlib.contextmanager
def bundled_queue(
    url: str, arguments: dict[str, str] | None = None, bodies: Sequence[bytes] = ()
) -> Iterator[tuple[Channel, str]]:
    """A new durable queue on the broker at ``url`` holding ``bodies`` (confirmed), and a
    channel to look at it with; the queue is deleted at the end."""
    queue = f"failover-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn:
        ch = conn.channel()
        ch.queue_declare(queue, durable=True, arguments=arguments)
        ch.confirm_select()
        for body in bodies:
            ch.basic_publish("", queue, body)
        ch.wait_for_confirms(timeout=60)
        yield ch, queue
        ch.queue_delete(queue)
