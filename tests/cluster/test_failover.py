"""kill -9 of the RabbitMQ node a running query is connected to, on a three-node RabbitMQ 4
cluster whose every node is in the connector's ``addresses``: nothing is lost.

* a quorum queue read into the sink's quorum queue: every message arrives, the source queue
  ends empty; what the dead connection held unacked comes again (counted and reported);
* a stream queue read into an idempotent sink: no gap, no duplicate;
* a batch write whose node dies: every row arrives.

The queues are declared through node 1, so their leaders die with it when it is the one
killed, as in a real node loss.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from amqp_spark.client import Channel, ClientError, connect
from amqp_spark.datasource import AMQPDataSource
from testbed.waiting import wait_until
from tests.support.rabbitmq_cluster import ClusterNode, RabbitMQCluster

pytestmark = [pytest.mark.spark, pytest.mark.rabbitmq, pytest.mark.slow]

QUORUM = {"x-queue-type": "quorum"}
STREAM = {"x-queue-type": "stream"}


@pytest.fixture
def amqp(spark: SparkSession) -> SparkSession:
    spark.dataSource.register(AMQPDataSource)
    return spark


def alive_url(cluster: RabbitMQCluster) -> str:
    """A URL naming every live node: the test's own view of the cluster."""
    hosts = ",".join(f"127.0.0.1:{node.port}" for node in cluster.alive())
    return f"amqp://guest:guest@{hosts}/%2F"


@contextlib.contextmanager
def channel_on(url: str) -> Iterator[Channel]:
    with connect(url) as conn:
        yield conn.channel()


def declare_and_fill(node: ClusterNode, arguments: dict[str, str], bodies: list[bytes]) -> str:
    """A new durable queue declared through ``node`` (its leader there), holding ``bodies``
    (published with confirms)."""
    queue = f"failover-{uuid.uuid4().hex[:8]}"
    with channel_on(node.url) as ch:
        ch.queue_declare(queue, durable=True, arguments=arguments)
        ch.confirm_select()
        for body in bodies:
            ch.basic_publish("", queue, body)
        ch.wait_for_confirms(timeout=120)
    return queue


def ready(cluster: RabbitMQCluster, queue: str) -> int:
    """The queue's ready count on a live node; -1 while the cluster cannot say (a leader
    being elected)."""
    try:
        with channel_on(alive_url(cluster)) as ch:
            return int(ch.queue_declare(queue, passive=True).message_count)
    except ClientError:
        return -1


def drain(cluster: RabbitMQCluster, queue: str, expected: int) -> list[bytes]:
    """Every body ``queue`` holds (consumed), once ``expected`` came or none came for 5 s."""
    got: list[bytes] = []
    with channel_on(alive_url(cluster)) as ch:
        ch.basic_qos(prefetch_count=5000)
        ch.basic_consume(queue, no_ack=True)
        while (delivery := ch.next_delivery(timeout=5.0)) is not None:
            got.append(delivery.body)
        ch.queue_delete(queue)
    assert len(got) >= expected, f"{queue} held {len(got)} of {expected}"
    return got


def node_serving(cluster: RabbitMQCluster, connection_name: str) -> ClusterNode:
    """The node the connector's connection ``connection_name`` is on, once it is made (the
    query makes it when it first needs it; asking the cluster takes a CLI run, seconds)."""
    found: list[ClusterNode] = []

    def serving() -> bool:
        node = cluster.node_serving(connection_name)
        found[:] = [node] if node is not None else []
        return bool(found)

    wait_until(serving, 120, f"a connection named {connection_name!r}")
    return found[0]


def wait_while_running(
    query: StreamingQuery, condition: Callable[[], bool], timeout: float, what: str
) -> None:
    """``wait_until`` that fails at once, with the query's error, if the query dies."""
    wait_until(lambda: condition() or not query.isActive, timeout, what)
    assert query.isActive, query.exception()


def bodies_of(count: int) -> list[bytes]:
    return [f"m{i:05d}".encode() for i in range(count)]


def test_killing_the_node_of_a_quorum_queue_query_loses_nothing(
    rabbitmq_cluster: RabbitMQCluster,
    amqp: SparkSession,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """The issue's done-when: 20,000 confirmed messages in a quorum queue, read into the
    sink's quorum queue while the node the query connects to first is killed."""
    cluster, total = rabbitmq_cluster, 20_000
    sent = bodies_of(total)
    source = declare_and_fill(cluster.nodes[0], QUORUM, sent)
    sink = declare_and_fill(cluster.nodes[0], QUORUM, [])
    connection = {"uri": cluster.url, "addresses": cluster.addresses}
    df = amqp.readStream.format("amqp").options(
        **connection, queue=source, queueType="quorum", prefetch="2000"
    )
    query = (
        df.load()
        .select("body")
        .writeStream.format("amqp")
        .options(**connection, routingKey=sink, checkpointLocation=str(tmp_path / "ck"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        node = node_serving(cluster, "amqp-spark stream consumer")
        wait_while_running(query, lambda: ready(cluster, sink) >= 2000, 180, "2,000 in the sink")
        in_sink = ready(cluster, sink)
        cluster.kill(node)
        killed_at = time.monotonic()
        wait_while_running(query, lambda: ready(cluster, sink) >= total, 240, "all in the sink")
        recovered_in = time.monotonic() - killed_at
        time.sleep(3)  # idle triggers: the last batch is committed, then acked
        assert query.isActive, query.exception()
    finally:
        query.stop()

    wait_until(lambda: ready(cluster, source) == 0, 60, "the source queue to be empty")
    got = drain(cluster, sink, total)
    duplicates = len(got) - len(set(got))
    record_property("duplicates", duplicates)
    print(
        f"killed {node.nodename} with {in_sink} messages in the sink; all {recovered_in:.1f} s "
        f"later: {len(got)} messages, {duplicates} duplicates"
    )
    assert in_sink < total, "every message was in the sink before the node died: no failover"
    assert set(got) == set(sent)


def test_killing_the_node_of_a_stream_queue_query_leaves_no_gap_and_no_duplicate(
    rabbitmq_cluster: RabbitMQCluster, amqp: SparkSession, tmp_path: Path
) -> None:
    cluster, total = rabbitmq_cluster, 10_000
    sent = bodies_of(total)
    stream = declare_and_fill(cluster.nodes[0], STREAM, sent)
    batches: dict[int, list[tuple[int, bytes]]] = {}

    def keep(df: DataFrame, batch_id: int) -> None:  # idempotent: a replay replaces
        batches[batch_id] = [(r.offset, bytes(r.body)) for r in df.collect()]

    def rows() -> int:
        return sum(map(len, list(batches.values())))

    query = (
        amqp.readStream.format("amqp")
        .options(uri=cluster.url, addresses=cluster.addresses, queue=stream)
        .options(queueType="stream", startingOffsets="first", maxMessagesPerTrigger="500")
        .load()
        .select("offset", "body")
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        node = node_serving(cluster, "amqp-spark stream positions")
        wait_while_running(query, lambda: rows() >= 1000, 180, "1,000 rows")
        cluster.kill(node)
        read_before = rows()
        wait_while_running(query, lambda: rows() >= total, 180, "every row")
    finally:
        query.stop()

    read = sorted(row for batch in batches.values() for row in batch)
    assert read == list(enumerate(sent))
    assert read_before < total, "every row was read before the node died: no failover"


def test_a_batch_write_whose_node_dies_loses_nothing(
    rabbitmq_cluster: RabbitMQCluster, amqp: SparkSession
) -> None:
    cluster, total = rabbitmq_cluster, 60_000
    sink = declare_and_fill(cluster.nodes[0], QUORUM, [])
    killed_at: list[float] = []

    def kill_mid_write() -> None:
        node = node_serving(cluster, "amqp-spark sink")
        wait_until(lambda: ready(cluster, sink) >= 5000, 180, "5,000 messages written")
        cluster.kill(node)
        killed_at.append(time.monotonic())

    killer = threading.Thread(target=kill_mid_write)
    killer.start()
    try:
        amqp.range(total, numPartitions=2).selectExpr("cast(id as string) as body").write.format(
            "amqp"
        ).options(uri=cluster.url, addresses=cluster.addresses, routingKey=sink).mode(
            "append"
        ).save()
        written_at = time.monotonic()
    finally:
        killer.join(timeout=240)

    assert killed_at and killed_at[0] < written_at, "the node died after the write: no failover"
    got = drain(cluster, sink, total)
    assert set(got) == {str(i).encode() for i in range(total)}
