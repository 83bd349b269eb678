"""A quorum queue read with ``queueType=quorum`` (consumed exactly as a classic queue): each
message becomes one row and is acked once Spark committed it, on the bundled broker and
RabbitMQ."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import bodies, classic_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_an_available_now_run_over_a_quorum_queue_reads_every_message_once_and_empties_it(
    broker: Broker, queries: Queries, amqp_spark: SparkSession
) -> None:
    queue = broker.new_queue(arguments={"x-queue-type": "quorum"}, durable=True)
    messages = bodies(30)
    broker.publish(queue, messages)

    rows, _ = queries.collect_available_now(classic_options(broker, queue, queueType="quorum"))

    assert sorted(r.body for r in rows) == messages
    assert {(r.queue, r.offset) for r in rows} == {(queue, None)}
    assert ready_once_unconsumed(broker, queue) == 0
