"""A super stream of 3 partitions on the three-node RabbitMQ 4 cluster, every node in the
connector's ``addresses``: the sink writes to it while its node is killed with kill -9, and
the source then reads it whole through the two surviving nodes.

The partitions are declared through node 1 as ``rabbitmq-streams add_super_stream --partitions
3`` makes them (leaders spread over the nodes by ``x-queue-leader-locator: balanced``), so the
node killed holds a partition leader. The source finds the partitions by their naming through
the address list, with the dead node first in it: the discovery, like the reads, has to go on
to a live node.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from amqp_spark.sink.super_stream import hash_partition
from testbed.waiting import wait_until
from tests.cluster.conftest import addresses_of
from tests.cluster.test_failover import alive_url
from tests.support.rabbitmq_cluster import ClusterNode, RabbitMQCluster
from tests.support.super_streams import declare_over_amqp

pytestmark = [pytest.mark.spark, pytest.mark.rabbitmq, pytest.mark.slow]

PARTITIONS = 3
#: Rows written: the write takes seconds; the kill comes 0.5 s after the sink connects.
ROWS = 30_000
#: Distinct routing keys: the hash spreads them over the 3 partitions.
KEYS = 997


def client_connections(cluster: RabbitMQCluster) -> dict[str, ClusterNode]:
    """The open TCP connections to a live node's AMQP port, by their local address, from the
    kernel's table: instant, where asking the cluster (``node_serving``) takes a CLI run of
    seconds, longer than a write of these rows may last."""
    by_port = {node.port: node for node in cluster.alive()}
    found = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        _, local, remote, state, *_ = line.split()
        if state == "01" and (node := by_port.get(int(remote.rsplit(":", 1)[1], 16))):
            found[local] = node  # "01": ESTABLISHED
    return found


def test_a_super_stream_written_while_the_sinks_node_dies_is_read_whole_through_the_survivors(
    rabbitmq_cluster: RabbitMQCluster,
    spark: SparkSession,
    record_property: Callable[[str, object], None],
) -> None:
    spark.dataSource.register(AMQPDataSource)
    cluster = rabbitmq_cluster
    name = f"ss-failover-{uuid.uuid4().hex[:8]}"
    with connect(cluster.nodes[0].url) as conn:
        streams = declare_over_amqp(conn.channel(), name, [str(i) for i in range(PARTITIONS)])
    try:
        killed: list[tuple[ClusterNode, float]] = []

        # Connections that Python workers of earlier tests keep are not the sink's: its own
        # (by its URL, every node in an order of this test's) are those made from here on.
        before = set(client_connections(cluster))
        addresses = addresses_of(*reversed(cluster.ports))

        def sinks() -> list[ClusterNode]:
            return [n for c, n in client_connections(cluster).items() if c not in before]

        def kill_the_sinks_node() -> None:
            wait_until(lambda: bool(sinks()), 120, "the sink to connect")
            time.sleep(0.5)  # into the write: finding the partitions or publishing
            wait_until(lambda: bool(sinks()), 60, "the sink's publishing connection")
            node = sinks()[0]
            cluster.kill(node)
            killed.append((node, time.monotonic()))

        killer = threading.Thread(target=kill_the_sinks_node)
        killer.start()
        started = time.monotonic()
        try:
            spark.range(ROWS, numPartitions=2).selectExpr(
                f"concat('key-', cast(id % {KEYS} as string)) as routing_key",
                "concat('row-', cast(id as string)) as body",
            ).write.format("amqp").options(
                uri=cluster.url, addresses=addresses, superStream=name
            ).mode("append").save()
            written_at = time.monotonic()
        finally:
            killer.join(timeout=240)
        assert killed and killed[0][1] < written_at, "the node died after the write: no failover"
        dead, killed_at = killed[0]
        assert dead.killed and dead not in cluster.alive()

        # The dead node first: finding the partitions and reading them must go past it.
        survivors_last = addresses_of(dead.port, *(node.port for node in cluster.alive()))
        read_started = time.monotonic()
        rows = (
            spark.read.format("amqp")
            .options(uri=cluster.url, addresses=survivors_last, superStream=name)
            .load()
            .select("queue", "offset", "body")
            .collect()
        )
        read_in = time.monotonic() - read_started

        by_partition: dict[str, list[Row]] = {}
        for row in sorted(rows, key=lambda r: (r.queue, r.offset)):
            by_partition.setdefault(row.queue, []).append(row)
        assert sorted(by_partition) == streams, "not every partition was read"
        for stream, read in by_partition.items():  # each stored message once, no gap
            assert [r.offset for r in read] == list(range(len(read))), stream
        bodies = Counter(bytes(r.body).decode() for r in rows)
        assert set(bodies) == {f"row-{i}" for i in range(ROWS)}, "rows lost"
        for stream, read in by_partition.items():  # each row where hash routing sends it
            for r in read:
                key = f"key-{int(bytes(r.body).decode().removeprefix('row-')) % KEYS}"
                assert streams[hash_partition(key, PARTITIONS)] == stream, (stream, r)
        duplicates = sum(count - 1 for count in bodies.values())
        record_property("duplicates", duplicates)
        print(
            f"killed {dead.nodename} {killed_at - started:.1f} s into the write of {ROWS} rows, "
            f"which ended {written_at - killed_at:.1f} s later; read back through the survivors "
            f"in {read_in:.1f} s: {len(rows)} messages in "
            f"{ {s: len(r) for s, r in by_partition.items()} }, {duplicates} duplicates "
            "(republished by the sink after the failover)"
        )
    finally:  # through the survivors: the killed node comes back only after the test
        with connect(alive_url(cluster)) as conn:
            ch = conn.channel()
            for stream in streams:
                ch.queue_delete(stream)
            ch.exchange_delete(name)
