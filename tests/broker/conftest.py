"""Fixtures of the broker tests: a pika connection and channel to ``broker_url`` (each test
runs against the bundled broker and RabbitMQ), unique names so runs do not collide, and
``restartable``: a broker a test can restart (the bundled program on a data directory, or a
private RabbitMQ node of its own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from testbed.broker_process import BrokerProcess
from testbed.rabbitmq import RabbitMQNode
from tests.support.fixtures import private_rabbitmq_node

from .restarts import Restartable


@pytest.fixture
def connection(broker_url: str) -> Iterator[pika.BlockingConnection]:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    yield conn
    if conn.is_open:
        conn.close()


@pytest.fixture
def channel(connection: pika.BlockingConnection) -> BlockingChannel:
    return connection.channel()


@pytest.fixture
def name() -> str:
    """A name no other test uses, for queues and exchanges."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def private_rabbitmq() -> Iterator[RabbitMQNode]:
    """A node of the restart tests alone: restarting the session's would cut the other tests'
    connections."""
    with private_rabbitmq_node("to restart") as node:
        yield node


@pytest.fixture(
    params=[
        "bundled, clean stop",
        "bundled, kill -9",
        pytest.param("rabbitmq, stop_app/start_app", marks=pytest.mark.rabbitmq),
    ]
)
def restartable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Restartable]:
    if request.param.startswith("rabbitmq"):
        node: RabbitMQNode = request.getfixturevalue("private_rabbitmq")
        yield Restartable(lambda: node.url, node.restart_app, bundled=False)
        return
    process = BrokerProcess(tmp_path / "data", "--log-level", "WARNING").start()
    stop = process.stop if request.param.endswith("clean stop") else process.kill

    def restart() -> None:
        stop()
        process.start()

    yield Restartable(lambda: process.url, restart, bundled=True)
    process.kill()
