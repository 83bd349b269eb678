"""The driver-side consumer of classic and quorum queues across a failover, in process: two
proxies of the bundled broker are two "nodes", and closing the first is its node dying.

Delivery tags are per connection: after the failover, the tags 1, 2, ... of the new
connection are the dead connection's messages delivered again. Spark's commit of a batch
read on the dead connection must therefore ack nothing on the new one (acking its tags
there would ack messages Spark has not committed, and lose them if the query then died)."""

from __future__ import annotations

import time

from amqp_spark.source.classic.driver_consumers import ClassicConsumers
from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import ClassicOffset
from amqp_spark.source.options import SourceOptions
from tests.cluster.conftest import addresses_of, bundled_queue, port_of
from tests.spark.recording_proxy import RecordingProxy

EVERYTHING = Limits()


def next_batch(consumers: ClassicConsumers, start: ClassicOffset, rows: int) -> ClassicOffset:
    """The end of the next batch after ``start`` once it holds ``rows`` deliveries, asked
    for as a processing-time trigger asks (``latestOffset`` without waiting), within 30 s."""
    deadline = time.monotonic() + 30
    while True:
        end = consumers.latest(start, EVERYTHING, wait=False)
        if sum(len(ds) for _, ds in consumers.batch(start, end)) >= rows:
            return end
        assert time.monotonic() < deadline, f"no batch of {rows} after {start}"
        time.sleep(0.05)


def consumers_of(queue: str, first: RecordingProxy, second: RecordingProxy) -> ClassicConsumers:
    """The driver-side consumers of ``queue`` with both "nodes" in ``addresses``."""
    addresses = addresses_of(port_of(first), port_of(second))
    return ClassicConsumers(
        SourceOptions.parse(
            {"uri": first.url, "addresses": addresses, "queue": queue, "prefetch": "100"}
        )
    )


def test_a_commit_of_the_dead_connections_batch_acks_nothing_on_the_next_node(
    node_proxies: tuple[RecordingProxy, RecordingProxy], bundled_broker_url: str
) -> None:
    first, second = node_proxies
    sent = [f"m{i}".encode() for i in range(10)]
    with bundled_queue(bundled_broker_url, bodies=sent) as (ch, queue):
        consumers = consumers_of(queue, first, second)
        try:
            start = consumers.start_offset()
            read = next_batch(consumers, start, 10)
            assert [b for _, rows in consumers.batch(start, read) for b in rows.bodies] == sent

            first.close()  # its node dies before Spark commits the batch
            again = next_batch(consumers, read, 10)
            consumers.ack_through(read)  # Spark commits the batch read on the dead connection
            redelivered = [
                (body, rows.distinct[kind].redelivered)
                for _, rows in consumers.batch(read, again)
                for body, kind in zip(rows.bodies, rows.kinds, strict=True)
            ]
        finally:
            consumers.close()  # the broker requeues whatever is unacked

        assert again.connection != read.connection
        assert redelivered == [(body, True) for body in sent]
        assert second.methods_sent(), "the consumer did not move to the second node"
        ready = ch.queue_declare(queue, passive=True).message_count
    assert ready == 10, "the commit of the dead connection's batch acked messages on the new one"


def test_a_wait_for_deliveries_goes_on_on_the_next_node_when_the_connection_dies(
    node_proxies: tuple[RecordingProxy, RecordingProxy], bundled_broker_url: str
) -> None:
    """AvailableNow and once runs wait for deliveries on their way: a connection lost while
    waiting is replaced and the wait goes on (it used to fail the query)."""
    first, second = node_proxies
    with bundled_queue(bundled_broker_url, bodies=[b"m"] * 10) as (_, queue):
        consumers = consumers_of(queue, first, second)
        try:
            start = consumers.start_offset()
            read = next_batch(consumers, start, 10)
            first.close()
            again = consumers.latest(read, EVERYTHING, wait=True)
        finally:
            consumers.close()

    assert again.connection != read.connection
