"""StreamConnection and the generated commands against a real RabbitMQ 4 with
``rabbitmq_stream``: the handshake, a stream's life, deduplication, delivery as Deliver v2
and the chunks RabbitMQ stores, as the client helpers of the connector will drive them."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import TypeVar

import pytest

from amqp_protocol.generated import stream as c
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.chunk import parse_chunk
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.connection import Role, State, StreamConnection, negotiate
from amqp_protocol.stream.values import OffsetSpecification, OffsetType, PublishedMessage
from tests.protocol.amqp10.stream_client import StreamEndpoint

pytestmark = pytest.mark.rabbitmq
OK = ResponseCode.OK
C = TypeVar("C", bound=Command)


class Peer:
    """A StreamConnection on a socket, one command at a time, every read bounded."""

    def __init__(self, endpoint: StreamEndpoint) -> None:
        self.sock = socket.create_connection((endpoint.host, endpoint.port), timeout=10)
        self.conn = StreamConnection(Role.CLIENT)
        self.received: list[Command] = []

    def send(self, command: Command) -> None:
        self.sock.sendall(self.conn.send(command))

    def next(self) -> Command:
        while not self.received:
            data = self.sock.recv(65536)
            assert data, "RabbitMQ closed the connection"
            self.received += self.conn.receive_data(data)
        return self.received.pop(0)

    def expect(self, kind: type[C]) -> C:
        """The next command of ``kind``, skipping heartbeats and metadata updates."""
        while True:
            command = self.next()
            if isinstance(command, kind):
                return command
            assert isinstance(command, c.Heartbeat | c.MetadataUpdate), command

    def request(self, command: Command, kind: type[C]) -> C:
        self.send(command)
        return self.expect(kind)

    def open(self, endpoint: StreamEndpoint) -> None:
        ids = self.conn.next_correlation_id
        self.request(
            c.PeerProperties(ids(), {"product": "amqp-spark tests"}), c.PeerPropertiesResponse
        )
        mechanisms = self.request(c.SaslHandshake(ids()), c.SaslHandshakeResponse)
        assert "PLAIN" in mechanisms.mechanisms
        plain = f"\0{endpoint.username}\0{endpoint.password}".encode()
        auth = self.request(c.SaslAuthenticate(ids(), "PLAIN", plain), c.SaslAuthenticateResponse)
        assert auth.response_code == OK
        tune = self.expect(c.Tune)
        self.send(c.Tune(negotiate(tune.frame_max, 1_048_576), negotiate(tune.heartbeat, 60)))
        opened = self.request(c.Open(ids(), endpoint.vhost), c.OpenResponse)
        assert opened.response_code == OK and self.conn.state is State.OPEN

    def close(self) -> None:
        self.request(c.Close(self.conn.next_correlation_id(), OK, "done"), c.CloseResponse)
        self.sock.close()


@pytest.fixture
def peer(rabbitmq_stream_url: str) -> Iterator[Peer]:
    endpoint = StreamEndpoint.parse(rabbitmq_stream_url)
    p = Peer(endpoint)
    p.open(endpoint)
    yield p
    p.sock.close()


def test_publish_deduplicate_and_read_back_as_stored_chunks(peer: Peer) -> None:
    ids = peer.conn.next_correlation_id
    stream = f"streamproto-{uuid.uuid4().hex[:8]}"
    created = peer.request(
        c.Create(ids(), stream, {"max-length-bytes": "100000000"}), c.CreateResponse
    )
    assert created.response_code == OK
    try:
        declared = peer.request(
            c.DeclarePublisher(ids(), 1, "writer", stream), c.DeclarePublisherResponse
        )
        assert declared.response_code == OK
        # Publishing ids 1-3, then 2-4 again: RabbitMQ confirms all, stores 1-4 once each.
        for first in (1, 2):
            messages = [PublishedMessage(i, f"m{i}".encode()) for i in range(first, first + 3)]
            peer.send(c.Publish(1, messages))
            confirmed: list[int] = []
            while len(confirmed) < 3:
                confirm = peer.expect(c.PublishConfirm)
                confirmed += confirm.publishing_ids
        sequence = peer.request(
            c.QueryPublisherSequence(ids(), "writer", stream), c.QueryPublisherSequenceResponse
        )
        assert sequence.sequence == 4

        versions = peer.request(
            c.ExchangeCommandVersions(ids(), [c.CommandVersion(c.DeliverV2.KEY, 1, 2)]),
            c.ExchangeCommandVersionsResponse,
        )
        # RabbitMQ lists what it reads (Publish up to v2); the client's Deliver 1-2 makes it
        # deliver with v2 (rabbit_stream_reader: process_client_command_api).
        publish_versions = {v.key: v.max_version for v in versions.commands}
        assert publish_versions[c.Publish.KEY] == 2
        subscribed = peer.request(
            c.Subscribe(ids(), 0, stream, OffsetSpecification(OffsetType.FIRST), 10),
            c.SubscribeResponse,
        )
        assert subscribed.response_code == OK
        records: list[bytes] = []
        offsets: list[int] = []
        while len(records) < 4:
            delivery = peer.expect(c.DeliverV2)
            chunk = parse_chunk(delivery.chunk, check_crc=True)
            offsets += range(chunk.header.first_offset, chunk.header.next_offset)
            records += [bytes(r) for r in chunk.records()]
        assert records == [b"m1", b"m2", b"m3", b"m4"]

        stats = peer.request(c.StreamStats(ids(), stream), c.StreamStatsResponse)
        assert stats.stats["first_chunk_id"] == 0
        assert stats.stats["committed_chunk_id"] <= offsets[-1]

        peer.send(c.StoreOffset("reader", stream, offsets[-1]))
        stored = peer.request(c.QueryOffset(ids(), "reader", stream), c.QueryOffsetResponse)
        assert stored.offset == offsets[-1]
        unsubscribed = peer.request(c.Unsubscribe(ids(), 0), c.UnsubscribeResponse)
        assert unsubscribed.response_code == OK
    finally:
        deleted = peer.request(c.Delete(ids(), stream), c.DeleteResponse)
    assert deleted.response_code == OK
    peer.close()


def test_rabbitmq_answers_with_the_protocols_codes(peer: Peer) -> None:
    ids = peer.conn.next_correlation_id
    missing = f"streamproto-missing-{uuid.uuid4().hex[:8]}"
    metadata = peer.request(c.Metadata(ids(), [missing]), c.MetadataResponse)
    (entry,) = metadata.streams_metadata
    assert (entry.stream, entry.response_code) == (missing, ResponseCode.STREAM_DOES_NOT_EXIST)
    query = peer.request(c.QueryOffset(ids(), "nobody", missing), c.QueryOffsetResponse)
    assert query.response_code == ResponseCode.STREAM_DOES_NOT_EXIST
    peer.send(c.Credit(42, 1))
    credit = peer.expect(c.CreditResponse)
    assert (credit.response_code, credit.subscription_id) == (
        ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST,
        42,
    )
    peer.close()
