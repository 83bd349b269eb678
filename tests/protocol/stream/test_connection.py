"""The sans-IO StreamConnection: framing, the handshake, errors with codes, heartbeats."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_protocol.generated import stream as c
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.chunk import build_chunk, delivered_parts, parse_chunk
from amqp_protocol.stream.connection import Role, State, StreamConnection, negotiate
from amqp_protocol.stream.errors import FrameTooLarge, MalformedFrame, UnexpectedCommand
from amqp_protocol.stream.frames import deliver_prefix
from amqp_protocol.stream.values import OffsetSpecification, OffsetType, PublishedMessage
from tests.protocol.stream.handshake import FakeClock, deliver, open_pair


def test_handshake_opens_both_sides_and_tunes_them() -> None:
    client, server = open_pair(FakeClock(), server_tune=(131_072, 30))
    assert (client.frame_max, client.heartbeat) == (server.frame_max, server.heartbeat)
    assert (server.frame_max, server.heartbeat) == (131_072, 30)


def test_negotiate_takes_the_smaller_limit_where_zero_is_none() -> None:
    assert negotiate(1024, 0) == 1024 and negotiate(0, 0) == 0 and negotiate(10, 20) == 10


def _frames() -> bytes:
    chunk = build_chunk([b"r1", b"r2"], first_offset=0, timestamp=0)
    commands = [
        c.Heartbeat(),
        c.PublishConfirm(1, [1, 2, 3]),
        c.Deliver(0, b"".join(delivered_parts(chunk))),
        c.MetadataUpdate(ResponseCode.STREAM_NOT_AVAILABLE, "s"),
    ]
    return b"".join(command.encode() for command in commands)


@given(st.lists(st.integers(1, 200), max_size=30))
def test_frames_split_anywhere_give_the_same_commands(cuts: list[int]) -> None:
    client, _ = open_pair(FakeClock())
    data = _frames()
    received = []
    pos = 0
    for size in [*cuts, len(data)]:
        received += client.receive_data(data[pos : pos + size])
        pos += size
    assert [type(r) for r in received] == [
        c.Heartbeat,
        c.PublishConfirm,
        c.Deliver,
        c.MetadataUpdate,
    ]
    deliver_ = received[2]
    assert isinstance(deliver_, c.Deliver)
    assert [bytes(r) for r in parse_chunk(deliver_.chunk).records()] == [b"r1", b"r2"]


def test_a_deliver_received_whole_hands_out_its_chunk_without_a_copy() -> None:
    client, _ = open_pair(FakeClock())
    header, data = delivered_parts(build_chunk([b"x" * 100], first_offset=0, timestamp=0))
    frame = deliver_prefix(0, len(header) + len(data)) + header + data
    (command,) = client.receive_data(frame)
    assert isinstance(command, c.Deliver)
    assert isinstance(command.chunk, memoryview) and command.chunk.obj is frame


def test_a_frame_over_the_maximum_is_refused_with_frame_too_large() -> None:
    client, server = open_pair(FakeClock(), server_tune=(1000, 0))
    frame = c.Publish(1, [PublishedMessage(1, b"x" * 2000)]).encode()
    with pytest.raises(FrameTooLarge, match="2021 bytes is over the maximum frame size of 1000"):
        server.receive_data(frame[:10])
    assert server.state is State.CLOSED
    close = c.Close.decode(memoryview(server.close_for(FrameTooLarge("too large")))[4:])
    assert close.closing_code == ResponseCode.FRAME_TOO_LARGE


def test_a_malformed_frame_raises_unknown_frame() -> None:
    _, server = open_pair(FakeClock())
    with pytest.raises(MalformedFrame) as caught:
        server.receive_data(b"\x00\x00\x00\x05\x00\x0a\x00\x01\x00")
    assert caught.value.code is ResponseCode.UNKNOWN_FRAME


def test_a_command_of_the_other_side_is_refused() -> None:
    client, server = open_pair(FakeClock())
    with pytest.raises(UnexpectedCommand, match="Deliver is sent by the server: a client sent it"):
        server.receive_data(c.Deliver(0, b"").encode())
    with pytest.raises(UnexpectedCommand, match="not a client"):
        client.send(c.PublishConfirm(0, []))


def test_commands_before_the_connection_is_open_are_refused() -> None:
    server = StreamConnection(Role.SERVER)
    subscribe = c.Subscribe(1, 0, "s", OffsetSpecification(OffsetType.FIRST), 1)
    with pytest.raises(
        UnexpectedCommand, match="Subscribe is not allowed while the connection is start"
    ) as caught:
        server.receive_data(subscribe.encode())
    assert caught.value.code is ResponseCode.PRECONDITION_FAILED


def test_a_handshake_command_after_open_is_refused() -> None:
    client, server = open_pair(FakeClock())
    with pytest.raises(UnexpectedCommand, match="Open after the connection is open"):
        server.receive_data(c.Open(9, "/").encode())


def test_a_failed_authentication_closes_the_connection() -> None:
    client = StreamConnection(Role.CLIENT)
    server = StreamConnection(Role.SERVER)
    deliver(client, server, c.PeerProperties(1))
    deliver(server, client, c.PeerPropertiesResponse(1, ResponseCode.OK))
    deliver(client, server, c.SaslHandshake(2))
    deliver(server, client, c.SaslHandshakeResponse(2, ResponseCode.OK, ["PLAIN"]))
    deliver(client, server, c.SaslAuthenticate(3, "PLAIN", b"\0guest\0wrong"))
    deliver(server, client, c.SaslAuthenticateResponse(3, ResponseCode.AUTHENTICATION_FAILURE))
    assert client.state is server.state is State.CLOSED
    with pytest.raises(UnexpectedCommand, match="closed"):
        client.send(c.Open(4, "/"))


def test_a_sasl_challenge_asks_for_another_authenticate() -> None:
    client = StreamConnection(Role.CLIENT)
    server = StreamConnection(Role.SERVER)
    deliver(client, server, c.PeerProperties(1))
    deliver(server, client, c.PeerPropertiesResponse(1, ResponseCode.OK))
    deliver(client, server, c.SaslHandshake(2))
    deliver(server, client, c.SaslHandshakeResponse(2, ResponseCode.OK, ["X"]))
    deliver(client, server, c.SaslAuthenticate(3, "X", b"first"))
    deliver(server, client, c.SaslAuthenticateResponse(3, ResponseCode.SASL_CHALLENGE, b"?"))
    assert client.state is State.SASL_MECHANISMS
    deliver(client, server, c.SaslAuthenticate(4, "X", b"second"))
    deliver(server, client, c.SaslAuthenticateResponse(4, ResponseCode.OK))
    assert server.state is State.AUTHENTICATED


def test_close_and_its_response_close_both_sides() -> None:
    client, server = open_pair(FakeClock())
    deliver(server, client, c.Close(7, ResponseCode.OK, "shutdown"))
    assert client.state is State.CLOSING
    deliver(client, server, c.CloseResponse(7, ResponseCode.OK))
    assert client.state is server.state is State.CLOSED


def test_heartbeats_fall_due_by_the_clock() -> None:
    clock = FakeClock()
    client, server = open_pair(clock, server_tune=(0, 10))
    assert not client.heartbeat_due() and not client.peer_timed_out()
    clock.now = 10
    assert client.heartbeat_due() and not client.peer_timed_out()
    deliver(client, server, c.Heartbeat())
    assert not client.heartbeat_due()
    clock.now = 20
    assert client.peer_timed_out() and not server.peer_timed_out()


def test_correlation_ids_are_fresh() -> None:
    client = StreamConnection(Role.CLIENT)
    assert [client.next_correlation_id() for _ in range(3)] == [1, 2, 3]
