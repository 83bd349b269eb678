"""The source (classic and stream queues) and the sink through Spark Connect:
``SparkSession.builder.remote("local[2]")`` with ``spark.dataSource.register(AMQPDataSource)``,
the path Databricks serverless and shared clusters take. The Connect session runs in a child
process of its own (tests/support/connect_session.py says why)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amqp_spark import spark_api
from tests.spark.conftest import Broker
from tests.spark.inputs import bodies, classic_options, stream_options
from tests.support import connect_session, fixtures
from tests.support.connect_session import ConnectSession

# The first test's setup may wait for another job's Connect session to free port 15002
# (connect_session.PORT_LOCK) before its own starts: the project's 300 s would not cover both.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(params=fixtures.broker_params("bundled", "rabbitmq"))
def broker_url(request: pytest.FixtureRequest) -> str:
    """The bundled broker and RabbitMQ 4 (what the connector's Connect users run)."""
    return fixtures.broker_url_of(request)


def taken_bodies(broker: Broker, queue: str) -> list[bytes]:
    """The sorted bodies of every message in ``queue``, taken with basic.get."""
    taken = []
    while (delivery := broker.ch.basic_get(queue, no_ack=True)) is not None:
        taken.append(delivery.body)
    return sorted(taken)


def available_now_runs(
    connect: ConnectSession, run: tuple[dict[str, str], str, str], batches: int
) -> list[dict[str, Any]]:
    """What the sink holds after the AvailableNow runs that read ``batches`` batches: one
    run, or one run per batch where PySpark has no admission control (4.0, 4.1: Spark runs
    AvailableNow as one batch, docs/pyspark-versions.md)."""
    rows: list[dict[str, Any]] = []
    for _ in range(1 if spark_api.ADMISSION_CONTROL else batches):
        rows = connect.call(connect_session.read_available_now, *run)
    return rows


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectSession]:
    session = ConnectSession(tmp_path_factory.mktemp("spark-connect"))
    try:
        assert session.call(connect_session.is_connect_session), "not a Spark Connect session"
        yield session
    finally:
        session.close()


def test_classic_queue_read_through_connect_empties_the_queue_and_a_rerun_reads_nothing(
    broker: Broker, connect: ConnectSession, tmp_path: Path
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(20))
    checkpoint = str(tmp_path / "ck")
    opts = classic_options(broker, queue, maxMessagesPerTrigger="7", checkpointLocation=checkpoint)
    run = (opts, checkpoint, str(tmp_path / "out"))

    rows = available_now_runs(connect, run, batches=3)

    assert sorted(r["body"] for r in rows) == bodies(20)
    assert {r["queue"] for r in rows} == {queue}
    assert broker.wait_ready(queue, 0, timeout=3) == 0
    assert len(connect.call(connect_session.read_available_now, *run)) == 20, "a row came twice"
    assert broker.ready(queue) == 0, "the last batch was not acked"


def test_stream_queue_read_through_connect_gives_every_offset_once(
    broker: Broker, connect: ConnectSession, stream_queue: str, tmp_path: Path
) -> None:
    broker.publish(stream_queue, bodies(20))
    opts = stream_options(broker, stream_queue, startingOffsets="first", maxMessagesPerTrigger="8")
    run = (opts, str(tmp_path / "ck"), str(tmp_path / "out"))

    rows = available_now_runs(connect, run, batches=3)

    assert sorted((r["offset"], r["body"]) for r in rows) == list(enumerate(bodies(20)))
    broker.publish(stream_queue, bodies(3, "new"))
    every = connect.call(connect_session.read_available_now, *run)
    assert sorted((r["offset"], r["body"]) for r in every) == list(
        enumerate(bodies(20) + bodies(3, "new"))
    )


def test_batch_write_through_connect_publishes_every_row_with_its_routing_key(
    broker: Broker, connect: ConnectSession
) -> None:
    queue = broker.new_queue()
    rows = [(body, queue) for body in bodies(10)]

    connect.call(
        connect_session.write_batch,
        rows,
        "body binary, routing_key string",
        {"uri": broker.url, "exchange": ""},
    )

    assert broker.wait_ready(queue, 10) == 10
    assert taken_bodies(broker, queue) == bodies(10)


def test_streaming_query_from_a_queue_to_an_exchange_through_connect_moves_every_message(
    broker: Broker, connect: ConnectSession, tmp_path: Path
) -> None:
    source, target = broker.new_queue(), broker.new_queue()
    broker.publish(source, bodies(15))

    checkpoint = str(tmp_path / "ck")
    connect.call(
        connect_session.stream_through,
        classic_options(broker, source, checkpointLocation=checkpoint),
        {"uri": broker.url, "exchange": "", "routingKey": target},
        checkpoint,
    )

    assert broker.wait_ready(target, 15) == 15
    assert taken_bodies(broker, target) == bodies(15)
    assert broker.wait_ready(source, 0, timeout=3) == 0
