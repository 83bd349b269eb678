"""Stream-protocol connections over several nodes, without a cluster, on the bundled broker and
on RabbitMQ 4: each "node" is a proxy of the broker's stream port, and closing it plays the
node dying (its connections end, it refuses new ones). The sink's publisher, an executor's
range read and the driver's view of where streams end each go on through the next node.
Which nodes: ``streamUri`` naming several, else every host of ``uri`` / ``addresses`` on the
stream port."""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable, Iterator

import pytest

from amqp_protocol.generated import stream as c
from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.client import connect
from amqp_spark.client.stream import StreamClient
from amqp_spark.client.stream.nodes import (
    NoStreamNodeAnswered,
    connect_stream,
    nothing,
    open_stream,
    stream_endpoints,
)
from amqp_spark.client.stream.publisher import StreamPublisher
from amqp_spark.options import OptionError
from amqp_spark.sink.settings import SinkSettings
from amqp_spark.sink.stream_ids import PublishingIds, producer_name
from testbed.ports import free_port
from tests.protocol.amqp10.stream_client import delete
from tests.spark.recording_proxy import RecordingProxy
from tests.spark.stream_dedup_client import stored_messages
from tests.stream_protocol.conftest import Endpoints
from tests.support.stream_reads import protocol_positions, rows_dying_after_first_batch

#: Messages of a test: more than one record batch of a range read.
COUNT = 14_000


def uri_naming(stream_uri: str, ports: list[int]) -> str:
    """``stream_uri`` (its credentials and vhost) naming ``ports`` of 127.0.0.1 as nodes."""
    parts = urllib.parse.urlsplit(stream_uri)
    userinfo = parts.netloc.rpartition("@")[0]
    nodes = ",".join(f"127.0.0.1:{port}" for port in ports)
    return parts._replace(netloc=f"{userinfo}@{nodes}").geturl()


def port_of(proxy: RecordingProxy) -> int:
    return int(urllib.parse.urlsplit(proxy.url).port or 0)


@pytest.fixture
def nodes(endpoints: Endpoints) -> Iterator[tuple[RecordingProxy, RecordingProxy, str]]:
    """Two "nodes" (proxies of the broker's stream port) and the URI naming both."""
    with RecordingProxy(endpoints.stream) as first, RecordingProxy(endpoints.stream) as second:
        yield first, second, uri_naming(endpoints.stream, [port_of(first), port_of(second)])


@pytest.fixture
def stream(endpoints: Endpoints) -> Iterator[str]:
    name = f"stream-failover-{uuid.uuid4().hex[:8]}"
    with StreamClient(stream_endpoints(endpoints.stream)[0]) as client:
        client.request(c.Create(client.next_correlation_id(), name, {}), c.CreateResponse, name)
    yield name
    delete(endpoints.stream, name)


def bodies(count: int) -> list[bytes]:
    return [f"row-{row}".encode() for row in range(count)]


def messages(ids: PublishingIds, count: int) -> list[PublishedMessage]:
    return [
        PublishedMessage(pid, body)
        for pid, body in zip(ids.for_rows(0, count), bodies(count), strict=True)
    ]


def test_the_sink_publisher_goes_on_through_the_next_node_and_stores_every_row_once(
    nodes: tuple[RecordingProxy, RecordingProxy, str], stream: str, endpoints: Endpoints
) -> None:
    first, second, uri = nodes
    ids = PublishingIds(producer_name(str(uuid.uuid4()), 0), 3)
    sent = messages(ids, COUNT)

    def reconnect(setup: Callable[[StreamClient], None]) -> StreamClient:
        return open_stream(uri, 2, "test sink", setup)[0]

    client = reconnect(nothing)
    publisher = StreamPublisher(client, ids.producer, 5000, "the test", reconnect, max_losses=3)
    try:
        publisher.declare(stream)
        publisher.publish(stream, sent[: COUNT // 2])
        first.close()  # the node dies with messages unconfirmed
        publisher.publish(stream, sent[COUNT // 2 :])
        confirmed = publisher.finish()
    finally:
        publisher.client.close()

    assert publisher.client is not client, "the publisher did not connect again"
    assert confirmed == COUNT
    assert stored_messages(endpoints.stream, stream) == bodies(COUNT)
    assert second.sent_to_server > 0, "nothing went through the second node"


def fill(endpoints: Endpoints, stream: str) -> list[bytes]:
    """``COUNT`` messages written to ``stream`` over AMQP 0-9-1 (a stream's records are AMQP
    1.0 messages, which the broker makes of them); their bodies."""
    sent = bodies(COUNT)
    with connect(endpoints.amqp) as conn:
        ch = conn.channel()
        ch.confirm_select()
        for body in sent:
            ch.basic_publish("", stream, body)
        ch.wait_for_confirms(timeout=60)
    return sent


def test_a_stream_range_read_goes_on_from_its_last_row_through_the_next_node(
    nodes: tuple[RecordingProxy, RecordingProxy, str], stream: str, endpoints: Endpoints
) -> None:
    first, second, uri = nodes
    sent = fill(endpoints, stream)
    rows = rows_dying_after_first_batch(uri, stream, COUNT, first.close)

    first_offset = rows[0][0]
    assert rows == [(first_offset + i, body) for i, body in enumerate(sent)]
    assert second.sent_to_server > 0, "the read did not go on through the second node"


def test_where_streams_end_is_asked_again_through_the_next_node(
    nodes: tuple[RecordingProxy, RecordingProxy, str], stream: str, endpoints: Endpoints
) -> None:
    first, second, uri = nodes
    positions = protocol_positions(endpoints.amqp, stream, uri)
    try:
        assert positions.ends(force=True) == {stream: 0}
        fill(endpoints, stream)
        first.close()
        ends = positions.ends(force=True)
    finally:
        positions.close()

    assert ends[stream] >= COUNT  # RabbitMQ's first offset need not be 0
    assert second.sent_to_server > 0, "the driver did not ask through the second node"


def test_no_node_answering_names_every_node_and_why() -> None:
    ports = [free_port(), free_port()]
    uri = uri_naming("rabbitmq-stream://guest:secret@x/%2F", ports)

    with pytest.raises(NoStreamNodeAnswered) as caught:
        connect_stream(uri, timeout=2.0)

    assert all(f"127.0.0.1:{port}: " in str(caught.value) for port in ports)
    assert "secret" not in str(caught.value)


def test_stream_uri_names_the_addresses_on_the_stream_port_unless_given() -> None:
    settings = SinkSettings.parse(
        {"uri": "amqp://u:p@n1:5672/v", "addresses": "n1:5672,n2:5673,n1:5674", "stream": "s"}
    )
    given = SinkSettings.parse(
        {"uri": "amqp://u:p@n1/v", "stream": "s", "streamUri": "rabbitmq-stream://u:p@a:1,b/w"}
    )

    assert settings.stream_uri_for_connections == "rabbitmq-stream://u:p@n1:5552,n2:5552/v"
    assert [
        (e.host, e.port, e.vhost) for e in stream_endpoints(given.stream_uri_for_connections)
    ] == [
        ("a", 1, "w"),
        ("b", 5552, "w"),
    ]


def test_a_stream_uri_with_a_bad_node_is_refused_naming_it() -> None:
    with pytest.raises(OptionError) as caught:
        SinkSettings.parse(
            {"uri": "amqp://n1", "stream": "s", "streamUri": "rabbitmq-stream://u:pw@a:1,b:x/v"}
        )

    assert "'b:x': the port 'x' is not in 1-65535" in str(caught.value)
    assert "pw" not in str(caught.value)
