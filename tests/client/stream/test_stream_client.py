"""The stream client against a broker: the handshake, requests, publishing with confirms,
subscribing with chunk credit, offsets, and errors that name the address and the code."""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

import pytest

from amqp_protocol.generated.stream import PublishingError
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.chunk import parse_chunk
from amqp_protocol.stream.values import OffsetSpecification, OffsetType, PublishedMessage
from amqp_spark.client.stream import (
    StreamClient,
    StreamConnectionError,
    StreamError,
    StreamNoNodeAnswered,
    StreamTimeout,
    connect,
)

pytestmark = pytest.mark.rabbitmq


class Confirms:
    """A publisher listener that counts confirms."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.errors: list[PublishingError] = []
        self.all_in = threading.Event()
        self.expected = 0

    def confirmed(self, publishing_ids: Sequence[int]) -> None:
        self.ids += publishing_ids
        if len(self.ids) >= self.expected:
            self.all_in.set()

    def failed(self, errors: Sequence[PublishingError]) -> None:
        self.errors += errors

    def closed(self, error: StreamError) -> None:
        self.all_in.set()


def publish(client: StreamClient, stream: str, bodies: list[bytes]) -> Confirms:
    confirms = Confirms()
    confirms.expected = len(bodies)
    client.declare_publisher(7, stream, confirms, reference="writer")
    client.publish(7, [PublishedMessage(i + 1, b) for i, b in enumerate(bodies)])
    assert confirms.all_in.wait(30)
    return confirms


def test_publish_then_read_every_record_with_chunk_credit(
    client: StreamClient, stream: str
) -> None:
    bodies = [f"message {i}".encode() for i in range(500)]
    confirms = publish(client, stream, bodies)
    assert sorted(confirms.ids) == list(range(1, 501)) and confirms.errors == []
    assert client.query_publisher_sequence("writer", stream) == 500
    stats = client.stream_stats(stream)
    assert stats["first_chunk_id"] >= 0 and stats["committed_chunk_id"] >= stats["first_chunk_id"]

    subscription = client.subscribe(stream, OffsetSpecification(OffsetType.FIRST), credit=1)
    records: list[bytes] = []
    while len(records) < 500:
        delivery = subscription.next_chunk(timeout=30)
        subscription.credit(1)
        chunk = parse_chunk(delivery.chunk, check_crc=True)
        records += [bytes(r) for r in chunk.records()]
        assert delivery.committed_chunk_id is not None  # Deliver v2
    assert records == bodies
    with pytest.raises(StreamTimeout, match="no chunk"):
        subscription.next_chunk(timeout=0.2)
    subscription.close()


def test_metadata_names_the_leader_and_unknown_streams(client: StreamClient, stream: str) -> None:
    response = client.metadata([stream, "no-such-stream-here"])
    found = {m.stream: m for m in response.streams_metadata}
    assert found[stream].response_code == ResponseCode.OK
    leader = {b.reference: b for b in response.brokers}[found[stream].leader_reference]
    assert leader.port == client.params.port
    assert found["no-such-stream-here"].response_code == ResponseCode.STREAM_DOES_NOT_EXIST


def test_offsets_stored_under_a_reference(client: StreamClient, stream: str) -> None:
    assert client.query_offset("reader", stream) is None
    publish(client, stream, [b"a", b"b"])
    client.store_offset("reader", stream, 1)
    # StoreOffset has no response: a request after it on the same connection sees it.
    assert client.query_offset("reader", stream) == 1


def test_refusals_name_the_address_and_the_code(client: StreamClient) -> None:
    with pytest.raises(StreamError) as refused:
        client.subscribe("no-such-stream-here", OffsetSpecification(OffsetType.FIRST), 1)
    assert refused.value.code == ResponseCode.STREAM_DOES_NOT_EXIST
    assert client.address in str(refused.value)
    assert "STREAM_DOES_NOT_EXIST" in str(refused.value)
    with pytest.raises(StreamError, match="STREAM_DOES_NOT_EXIST"):
        client.stream_stats("no-such-stream-here")
    assert client.is_open


def test_wrong_password_is_refused_without_showing_it(stream_url: str) -> None:
    parts = urlsplit(stream_url)
    bad = parts._replace(netloc=f"{parts.username}:wr0ng-secret@{parts.hostname}:{parts.port}")
    with pytest.raises(StreamConnectionError) as refused:
        connect(bad.geturl())
    assert refused.value.code == ResponseCode.AUTHENTICATION_FAILURE
    assert f"{parts.hostname}:{parts.port}" in str(refused.value)
    assert "wr0ng-secret" not in str(refused.value)


def test_unknown_vhost_is_refused(stream_url: str) -> None:
    parts = urlsplit(stream_url)
    with pytest.raises(StreamConnectionError, match="VIRTUAL_HOST_ACCESS_FAILURE"):
        connect(parts._replace(path="/no-such-vhost").geturl())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_addresses_are_tried_in_turn(stream_url: str) -> None:
    parts = urlsplit(stream_url)
    userinfo = parts.netloc.rpartition("@")[0]
    dead = f"127.0.0.1:{_closed_port()}"
    live = f"{parts.hostname}:{parts.port}"
    with connect(parts._replace(netloc=f"{userinfo}@{dead},{live}").geturl()) as conn:
        assert conn.address == live
    with pytest.raises(StreamNoNodeAnswered) as none:
        connect(
            f"rabbitmq-stream://{userinfo}@{dead},127.0.0.1:{_closed_port()}/",
            retries=1,
            sleep=lambda _: None,
        )
    assert len(none.value.failures) == 4 and dead in str(none.value)
    assert "password" not in str(none.value)
