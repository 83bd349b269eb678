"""The broker restarts under a running streaming query, which survives it (docs/source.md,
Errors: a connection that dies mid-query is replaced on the next trigger, within
``maxReconnectAttempts``). A durable classic queue of persistent messages loses nothing and
ends empty (every message acked); a stream queue loses and repeats nothing. Both brokers, the
same test code:

* bundled: a broker of the test alone with a data directory, stopped and started again on
  the same port;
* RabbitMQ: a private node of this module whose application is stopped and started
  (``rabbitmqctl stop_app``/``start_app``). Not the session's node: a restart closes every
  connection and drops non-durable queues of whoever else uses it, and the session node is
  shared by every RabbitMQ test. One more node costs ~10 s of boot for the module.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.client import ChannelClosed
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.reader_choice import micro_batch_reader
from testbed.rabbitmq import RabbitMQNode
from testbed.waiting import wait_until
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.classic_acks import nothing_waiting
from tests.spark.conftest import Broker, Queries, RestartableBroker, confirming_channel
from tests.spark.inputs import bodies, classic_options, stream_options
from tests.support.fixtures import private_rabbitmq_node

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PERSISTENT = {"delivery_mode": 2}
#: Messages published before the restart (mostly still unacked in the source when it comes)
#: and after it, and the rows per micro-batch.
BEFORE, AFTER, PER_TRIGGER = 200, 100, 20


class Restartable(Protocol):
    """A broker that a test may restart; ``broker`` is the test's view of it."""

    broker: Broker

    def restart(self) -> None: ...

    def stop(self) -> None: ...


class RestartableRabbitMQ:
    """A private RabbitMQ node seen through one confirming connection, renewed at each
    restart of the node's application."""

    def __init__(self, node: RabbitMQNode) -> None:
        self._node = node
        self.broker = Broker(node.url, *confirming_channel(node.url))

    def restart(self) -> None:
        self.broker.conn.close()
        self._node.restart_app()
        self.broker.conn, self.broker.ch = confirming_channel(self._node.url)

    def stop(self) -> None:
        """Delete the test's queues: the node outlives the test."""
        wait_for_queues(self.broker)
        for queue in self.broker.declared:
            self.broker.ch.queue_delete(queue)
        self.broker.conn.close()


@pytest.fixture(scope="module")
def private_rabbitmq() -> Iterator[RabbitMQNode]:
    """A RabbitMQ node of this module alone."""
    with private_rabbitmq_node("to restart") as node:
        yield node


@pytest.fixture(
    params=[pytest.param("bundled"), pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]
)
def restartable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Restartable]:
    made: Restartable
    if request.param == "bundled":
        made = RestartableBroker(tmp_path / "broker-data")
    else:
        made = RestartableRabbitMQ(request.getfixturevalue("private_rabbitmq"))
    yield made
    made.stop()


def queue_is_up(broker: Broker, queue: str) -> bool:
    """True if ``queue`` answers a passive declare. A RabbitMQ stream queue is "down or
    inaccessible" (404) for a moment after ``start_app``, and RabbitMQ 3.10 confirms
    messages published to it then without storing them."""
    try:
        broker.ready(queue)
    except ChannelClosed:
        broker.ch = broker.conn.channel()
        broker.ch.confirm_select()
        return False
    return True


def wait_for_queues(broker: Broker) -> None:
    """Return once every queue of the test is up after a restart."""
    wait_until(
        lambda: all(queue_is_up(broker, queue) for queue in broker.declared),
        30,
        "the test's queues to be up after the restart",
    )


def test_classic_queue_loses_nothing_and_acks_everything_across_a_broker_restart(
    restartable: Restartable, queries: Queries
) -> None:
    broker = restartable.broker
    queue = broker.new_queue(durable=True)
    broker.publish(queue, bodies(BEFORE, "before"), properties=PERSISTENT)
    got: list[bytes] = []
    query = queries.start(
        classic_options(broker, queue, maxMessagesPerTrigger=str(PER_TRIGGER)),
        queries.checkpoint(),
        lambda df, _: got.extend(r.body for r in df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    wait_until(lambda: len(got) >= PER_TRIGGER, 90, "the first batch")

    restartable.restart()  # the source holds the rest of BEFORE unacked: requeued, kept
    wait_for_queues(broker)
    broker.publish(queue, bodies(AFTER, "after"), properties=PERSISTENT)

    everything = set(bodies(BEFORE, "before") + bodies(AFTER, "after"))
    wait_until(lambda: everything <= set(got), 120, "every message after the restart")
    wait_until(lambda: nothing_waiting(query, queue), 60, "nothing ready or unacked")
    assert query.isActive, query.exception()
    query.stop()
    assert ready_once_unconsumed(broker, queue) == 0


def test_stream_queue_loses_and_repeats_nothing_across_a_broker_restart(
    restartable: Restartable, queries: Queries
) -> None:
    broker = restartable.broker
    queue = broker.new_stream_queue()
    broker.publish(queue, bodies(BEFORE, "before"))
    got: list[tuple[int, bytes]] = []
    query = queries.start(
        stream_options(
            broker, queue, startingOffsets="first", maxMessagesPerTrigger=str(PER_TRIGGER)
        ),
        queries.checkpoint(),
        lambda df, _: got.extend((r.offset, r.body) for r in df.collect()),
        trigger={"processingTime": "500 milliseconds"},
    )
    wait_until(lambda: len(got) >= PER_TRIGGER, 90, "the first batch")

    restartable.restart()
    wait_for_queues(broker)
    broker.publish(queue, bodies(AFTER, "after"))

    total = BEFORE + AFTER
    wait_until(lambda: len({offset for offset, _ in got}) >= total, 120, "every offset")
    assert query.isActive, query.exception()
    query.stop()
    assert sorted(got) == list(enumerate(bodies(BEFORE, "before") + bodies(AFTER, "after")))


RESTARTS_TO_CATCH_THE_QUEUE_DOWN = 5


def test_stream_positions_are_read_right_after_a_broker_restart(restartable: Restartable) -> None:
    """For a moment after a restart RabbitMQ refuses basic.consume on a stream queue with 404
    'home node ... is down or inaccessible': the source tries again (maxReconnectAttempts)
    rather than fail saying the queue does not exist."""
    broker = restartable.broker
    queue = broker.new_stream_queue()
    broker.publish(queue, bodies(50))
    options = stream_options(broker, queue, startingOffsets="first")
    reader = micro_batch_reader(SourceOptions.parse(options))
    previous = signal.getsignal(signal.SIGTERM)  # the reader chains a handler to it
    try:
        start = reader.initialOffset()

        # The source must ride out a queue that is not up yet: restart until the broker is
        # caught with the queue down (RabbitMQ, most times at the first restart; the bundled
        # broker recovers its queues before it listens, so there it never is).
        for _ in range(RESTARTS_TO_CATCH_THE_QUEUE_DOWN):
            restartable.restart()
            if not queue_is_up(broker, queue):
                break
        end = reader.latestOffset(start, ReadMaxRows(10))

        assert end == {"kind": "stream", "queues": {queue: 10}}
    finally:
        reader.stop()
        signal.signal(signal.SIGTERM, previous)
