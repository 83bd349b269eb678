"""The driver-side consumer of classic and quorum queues across a failover, in process: two
proxies of the bundled broker are two "nodes", and closing the first is its node dying.

Delivery tags are per connection: after the failover, the tags 1, 2, ... of the new
connection are the dead connection's messages delivered again. Spark's commit of a batch
read on the dead connection must therefore ack nothing on the new one (acking its tags
there would ack messages Spark has not committed, and lose them if the query then died)."""

from __future__ import annotations

from amqp_spark.source.classic import ClassicConsumers
from amqp_spark.source.limits import Limits
from amqp_spark.source.options import SourceOptions
from tests.cluster.conftest import addresses_of, bundled_queue, port_of
from tests.spark.recording_proxy import RecordingProxy

EVERYTHING = Limits()


def test_a_commit_of_the_dead_connections_batch_acks_nothing_on_the_next_node(
    node_proxies: tuple[RecordingProxy, RecordingProxy], bundled_broker_url: str
) -> None:
    first, second = node_proxies
    sent = [f"m{i}".encode() for i in range(10)]
    with bundled_queue(bundled_broker_url, bodies=sent) as (ch, queue):
        options = SourceOptions.parse(
            {
                "uri": first.url,
                "addresses": addresses_of(port_of(first), port_of(second)),
                "queue": queue,
                "prefetch": "100",
            }
        )
        consumers = ClassicConsumers(options)
        try:
            start = consumers.start_offset()
            read = consumers.latest(start, EVERYTHING, wait=True)
            assert [d.body for _, ds in consumers.batch(start, read) for d in ds] == sent

            first.close()  # its node dies before Spark commits the batch
            again = consumers.latest(read, EVERYTHING, wait=True)
            consumers.ack_through(read)  # Spark commits the batch read on the dead connection
            redelivered = [d for _, ds in consumers.batch(read, again) for d in ds]
        finally:
            consumers.close()  # the broker requeues whatever is unacked

        assert again.connection != read.connection
        assert [(d.body, d.redelivered) for d in redelivered] == [(body, True) for body in sent]
        assert second.methods_sent(), "the consumer did not move to the second node"
        ready = ch.queue_declare(queue, passive=True).message_count
    assert ready == 10, "the commit of the dead connection's batch acked messages on the new one"
