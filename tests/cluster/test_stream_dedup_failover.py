"""Publisher deduplication outlives the death of a stream's leader, on the three-node RabbitMQ
4 cluster: what the stream writer's failover relies on. Rows of one task are written under
the sink's producer name and ids (``amqp_spark.sink.stream_ids``) through the leader's node,
which is then killed with kill -9; the task's retry sends every row again, more rows too,
through a surviving node, to the new leader: each row is stored once."""

from __future__ import annotations

import time
import uuid

import pytest

from amqp_spark.client import connect
from amqp_spark.sink.stream_ids import PublishingIds, producer_name
from tests.spark.stream_dedup_client import QUERY, rows, send, sequence_of, stored_messages
from tests.support.rabbitmq_cluster import RabbitMQCluster

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

#: Rows of the first attempt, and of the retry after the kill.
FIRST, ALL = 1000, 2500


def resend_until_a_leader_answers(uri: str, stream: str, timeout: float = 120.0) -> int:
    """The retry: every row under the same name and ids, sent again until the stream has a
    leader again (an election follows the kill); returns the sequence before the resend."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            before = sequence_of(uri, stream, producer_name(QUERY, 0))
            send(uri, stream, rows(0, 0, ALL, "retry"), producer_name(QUERY, 0))
            return before
        except Exception:  # rstream's errors while the stream has no leader yet
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def test_rows_sent_again_to_the_new_leader_after_a_kill_are_stored_once(
    rabbitmq_cluster: RabbitMQCluster,
) -> None:
    cluster = rabbitmq_cluster
    leader, survivor = cluster.nodes[0], cluster.nodes[1]
    stream = f"dedup-failover-{uuid.uuid4().hex[:8]}"
    with connect(leader.url) as conn:  # the leader on node 1, a replica on each other node
        conn.channel().queue_declare(
            stream,
            durable=True,
            arguments={"x-queue-type": "stream", "x-queue-leader-locator": "client-local"},
        )
    send(leader.stream_url, stream, rows(0, 0, FIRST, "first"), producer_name(QUERY, 0))

    cluster.kill(leader)
    before = resend_until_a_leader_answers(survivor.stream_url, stream)

    assert PublishingIds(producer_name(QUERY, 0), 0).rows_in_stream(before) == FIRST
    stored = [m.decode() for m in stored_messages(survivor.stream_url, stream)]
    assert stored == [f"0:{r}:first" for r in range(FIRST)] + [
        f"0:{r}:retry" for r in range(FIRST, ALL)
    ]
