"""The sans-IO Connection: framing, content assembly, negotiation and channel life cycle."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import ALL_SPECS, SPEC_0_8, SPEC_0_9, SPEC_0_9_1, Connection, errors
from amqp_protocol import frames as fr
from amqp_protocol.events import (
    ContentReceived,
    Event,
    HeartbeatReceived,
    MethodReceived,
    ProtocolHeaderReceived,
    UnsupportedProtocol,
)

SPEC = SPEC_0_9_1
Publish = SPEC.method("basic.publish")
Props = SPEC.properties("basic")


def _method(name: str, **fields: Any) -> Any:
    return SPEC.method(name)(**fields)


def _server(*open_channels: int, frame_max: int = 131072) -> Connection:
    """A server that read the 0-9-1 header and has ``open_channels`` open."""
    server = Connection("server", frame_max=frame_max)
    client = Connection("client", SPEC)
    wire = client.initiate() + b"".join(
        client.send_method(ch, _method("channel.open")) for ch in open_channels
    )
    evs = server.receive_data(wire)
    assert evs[0] == ProtocolHeaderReceived(SPEC)
    return server


def _client() -> Connection:
    return Connection("client", SPEC)


def feed_in_pieces(conn: Connection, wire: bytes, cuts: list[int]) -> list[Event]:
    """The events of ``wire`` received in pieces cut at ``cuts``."""
    events: list[Event] = []
    bounds = [0, *sorted(cuts), len(wire)]
    for start, end in zip(bounds, bounds[1:]):  # noqa: B905 - lengths differ by one
        events += conn.receive_data(wire[start:end])
    return events


def _frame(frame_type: int, channel: int, payload: bytes, end: bytes = b"\xce") -> bytes:
    return fr.FRAME_HEADER.pack(frame_type, channel, len(payload)) + payload + end


messages = st.lists(
    st.tuples(
        st.sampled_from([1, 2, 3]),
        st.binary(max_size=300),
        st.sampled_from(["k", "orders.eu", ""]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(msgs=messages, data=st.data())
def test_content_is_assembled_whatever_the_byte_stream_split(
    msgs: list[tuple[int, bytes, str]], data: st.DataObject
) -> None:
    sender = _client()
    sender.frame_max = 4096 if data.draw(st.booleans()) else 64 + fr.FRAME_OVERHEAD
    wire, expected = b"", []
    for channel, body, key in msgs:
        method, props = Publish(routing_key=key), Props(message_id=key, headers={"n": len(body)})
        wire += sender.send_content(channel, method, props, body) + sender.send_heartbeat()
        expected += [ContentReceived(channel, method, props, body), HeartbeatReceived()]
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=12))
    assert feed_in_pieces(_server(1, 2, 3), wire, cuts) == expected


def test_frames_of_different_channels_may_interleave() -> None:
    sender = _client()
    sender.frame_max = 16 + fr.FRAME_OVERHEAD
    one = sender.send_content(1, Publish(routing_key="a"), Props(), b"x" * 40)
    two = sender.send_content(2, Publish(routing_key="b"), Props(), b"y" * 40)
    frames_one, frames_two = _split_frames(one), _split_frames(two)
    interleaved = b"".join(a + b for a, b in zip(frames_one, frames_two, strict=True))
    events = _server(1, 2).receive_data(interleaved)
    assert [(e.channel, e.body) for e in events] == [(1, b"x" * 40), (2, b"y" * 40)]  # type: ignore[union-attr]


def _split_frames(wire: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(wire):
        (size,) = struct.unpack_from(">I", wire, pos + 3)
        out.append(wire[pos : pos + 8 + size])
        pos += 8 + size
    return out


def test_body_is_split_into_frames_no_larger_than_frame_max() -> None:
    sender = _client()
    sender.frame_max = 4096
    body = bytes(range(256)) * 40
    wire = sender.send_content(1, Publish(), Props(), body)
    parts = _split_frames(wire)
    assert [p[0] for p in parts] == [1, 2, 3, 3, 3]
    assert all(len(p) <= 4096 for p in parts)
    events = _server(1, frame_max=4096).receive_data(wire)
    assert events == [ContentReceived(1, Publish(), Props(), body)]


def test_zero_length_body_has_no_body_frame_and_is_delivered() -> None:
    wire = _client().send_content(1, Publish(), Props(content_type="a"), b"")
    assert [p[0] for p in _split_frames(wire)] == [1, 2]
    assert _server(1).receive_data(wire) == [
        ContentReceived(1, Publish(), Props(content_type="a"), b"")
    ]


@pytest.mark.parametrize("body", [b"", b"x" * 10, bytes(range(256)) * 40], ids=len)
def test_content_frames_are_what_send_content_writes_after_the_method_frame(body: bytes) -> None:
    sender = _client()
    sender.frame_max = 4096
    publish, props = Publish(routing_key="rk"), Props(content_type="a")
    whole = sender.send_content(1, publish, props, body)
    content = sender.content_frames(1, publish, props, body)
    assert sender.send_method(1, publish) + content == whole
    assert [p[0] for p in _split_frames(content)] == [p[0] for p in _split_frames(whole)][1:]


def test_frame_max_of_zero_means_no_limit() -> None:
    sender = _client()
    sender.frame_max = 0
    body = b"z" * 300_000
    assert len(_split_frames(sender.send_content(1, Publish(), Props(), body))) == 3
    receiver = _server(1)
    receiver.frame_max = 0
    wire = sender.send_content(1, Publish(), Props(), body)
    assert receiver.receive_data(wire)[0].body == body  # type: ignore[union-attr]


def test_heartbeats_are_events() -> None:
    server = _server()
    assert server.receive_data(fr.HEARTBEAT_FRAME * 2) == [HeartbeatReceived()] * 2


def test_unparsed_holds_the_start_of_a_frame_whose_end_has_not_arrived() -> None:
    server = _server()
    frame = fr.HEARTBEAT_FRAME
    assert server.receive_data(frame + frame[:3]) == [HeartbeatReceived()]
    assert server.unparsed() == frame[:3]
    assert server.receive_data(frame[3:]) == [HeartbeatReceived()]
    assert server.unparsed() == b""


@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: s.label)
def test_server_negotiates_each_supported_version(spec: Any) -> None:
    server = Connection("server")
    client = Connection("client", spec)
    tune_ok = spec.method("connection.tune-ok")(channel_max=0, frame_max=4096, heartbeat=0)
    events = server.receive_data(client.initiate() + client.send_method(0, tune_ok))
    assert events == [ProtocolHeaderReceived(spec), MethodReceived(0, tune_ok)]
    assert server.spec is spec


def test_protocol_headers_are_the_specs() -> None:
    assert SPEC_0_9_1.protocol_header == b"AMQP\x00\x00\x09\x01"
    assert SPEC_0_9.protocol_header == b"AMQP\x01\x01\x00\x09"
    assert SPEC_0_8.protocol_header == b"AMQP\x01\x01\x08\x00"


@pytest.mark.parametrize(
    "header", [b"AMQP\x00\x01\x00\x00", b"AMQP\x01\x01\x00\x0a", b"GET / HTTP/1.1\r\n"]
)
def test_server_answers_an_unsupported_header_with_its_preferred_one(header: bytes) -> None:
    server = Connection("server")
    events = server.receive_data(header)
    assert events == [UnsupportedProtocol(header[:8], SPEC_0_9_1.protocol_header)]
    assert server.closed


def test_server_refuses_a_non_amqp_greeting_before_8_bytes() -> None:
    server = Connection("server")
    assert server.receive_data(b"HTTP") == [UnsupportedProtocol(b"HTTP", SPEC.protocol_header)]


def test_server_waits_for_a_header_arriving_byte_by_byte() -> None:
    server = Connection("server", SPEC_0_9)
    header = SPEC_0_9.protocol_header
    assert [server.receive_data(header[i : i + 1]) for i in range(7)] == [[]] * 7
    assert server.receive_data(header[7:]) == [ProtocolHeaderReceived(SPEC_0_9)]


def test_server_negotiates_a_header_alias_as_its_version() -> None:
    """py-amqplib's ``AMQP 1 1 9 1`` is one of 0-8's ``header_aliases``."""
    (alias,) = SPEC_0_8.header_aliases
    assert Connection("server").receive_data(alias) == [ProtocolHeaderReceived(SPEC_0_8)]
    assert Connection("server", SPEC).receive_data(alias) == [
        UnsupportedProtocol(alias, SPEC.protocol_header)
    ]


def test_server_with_one_spec_refuses_the_others() -> None:
    server = Connection("server", SPEC_0_8)
    assert server.receive_data(SPEC.protocol_header) == [
        UnsupportedProtocol(SPEC.protocol_header, SPEC_0_8.protocol_header)
    ]


def test_client_reports_the_header_a_server_offers_instead() -> None:
    client = Connection("client", SPEC_0_8)
    offered = SPEC.protocol_header
    assert client.receive_data(offered[:3]) == []
    assert client.receive_data(offered[3:]) == [UnsupportedProtocol(offered, b"")]


# -- violations -------------------------------------------------------------------------------

_PUBLISH = _client().send_method(1, Publish(routing_key="k"))
_HEADER = _frame(2, 1, Props().encode_header(3))
_BODY = _frame(3, 1, b"abc")


def _method_frame(channel: int, payload: bytes) -> bytes:
    return _frame(1, channel, payload)


VIOLATIONS = {
    "method on an unopened channel": (504, _method_frame(5, Publish().encode())),
    "class method on channel 0": (504, _method_frame(0, Publish().encode())),
    "connection method on a channel": (
        503,
        _method_frame(1, _method("connection.close-ok").encode()),
    ),
    "content header without a method": (505, _HEADER),
    "body without a header": (505, _PUBLISH + _BODY),
    "method in the middle of content": (505, _PUBLISH + _HEADER + _PUBLISH),
    "body longer than declared": (501, _PUBLISH + _HEADER + _frame(3, 1, b"abcd")),
    "frame over frame-max": (501, _frame(3, 1, b"x" * 131072)),
    "bad frame-end": (501, _frame(1, 1, Publish().encode(), end=b"\x00")),
    "heartbeat on a channel": (501, _frame(8, 1, b"")),
    "unknown frame type": (501, _frame(9, 0, b"")),
    "unknown class": (503, _method_frame(1, b"\x03\xe7\x00\x0a")),
    "unknown method": (503, _method_frame(1, b"\x00\x3c\x03\xe7")),
    "method ids cut short": (502, _method_frame(1, b"\x00\x3c")),
    "truncated arguments": (502, _method_frame(1, Publish(routing_key="key").encode()[:-3])),
    "stray bytes after arguments": (502, _method_frame(1, Publish().encode() + b"\x00")),
    "bad field-table type": (
        502,
        _method_frame(1, _method("queue.declare", arguments={"a": 1}).encode().replace(b"I", b"Z")),
    ),
    "header of another class": (
        505,
        _PUBLISH + _frame(2, 1, struct.pack(">HHQH", 70, 0, 3, 0)),
    ),
    "content header cut short": (502, _PUBLISH + _frame(2, 1, b"\x00\x3c\x00")),
    # Whole contents in one read (the connection's fast path) are held to the same rules.
    "whole content with a body frame over frame-max": (
        501,
        _PUBLISH + _frame(2, 1, Props().encode_header(131073)) + _frame(3, 1, b"x" * 131073),
    ),
    "whole content with stray bytes after no properties": (
        502,
        _PUBLISH + _frame(2, 1, struct.pack(">HHQHB", 60, 0, 3, 0, 0)) + _BODY,
    ),
    "whole content with a bad header frame-end": (
        501,
        _PUBLISH + _frame(2, 1, Props().encode_header(3), end=b"\x00") + _BODY,
    ),
    "whole content with a bad body frame-end": (
        501,
        _PUBLISH + _HEADER + _frame(3, 1, b"abc", end=b"\x00"),
    ),
    "whole content with its header on another channel": (
        505,
        _PUBLISH + _frame(2, 2, Props().encode_header(3)) + _BODY,
    ),
}


@pytest.mark.parametrize(("code", "wire"), VIOLATIONS.values(), ids=VIOLATIONS.keys())
def test_protocol_violation_raises_its_reply_code(code: int, wire: bytes) -> None:
    with pytest.raises(errors.AMQPError) as caught:
        _server(1).receive_data(wire)
    assert caught.value.reply_code == code
    assert type(caught.value) is errors.error_for_code(code)


def test_events_before_a_faulty_frame_ride_on_the_exception() -> None:
    good = _client().send_content(1, Publish(), Props(), b"ok") + fr.HEARTBEAT_FRAME
    with pytest.raises(errors.UnexpectedFrame) as caught:
        _server(1).receive_data(good + _HEADER)
    assert caught.value.events == [  # type: ignore[attr-defined]
        ContentReceived(1, Publish(), Props(), b"ok"),
        HeartbeatReceived(),
    ]


def test_error_names_the_culprit_method() -> None:
    with pytest.raises(errors.ChannelError) as caught:
        _server().receive_data(_method_frame(7, Publish().encode()))
    assert (caught.value.class_id, caught.value.method_id) == (60, 40)


def test_channel_open_twice_is_a_channel_error() -> None:
    with pytest.raises(errors.ChannelError):
        _server(1).receive_data(_client().send_method(1, _method("channel.open")))


def test_after_sending_channel_close_only_close_methods_are_taken() -> None:
    server = _server(1)
    server.send_method(1, _method("channel.close", reply_code=406, reply_text="x"))
    ignored = _client().send_content(1, Publish(), Props(), b"late")
    close_ok = _method("channel.close-ok")
    events = server.receive_data(ignored + _method_frame(1, close_ok.encode()))
    assert events == [MethodReceived(1, close_ok)]
    assert 1 not in server.open_channels


def test_after_sending_connection_close_only_its_reply_matters() -> None:
    server = _server(1)
    server.send_method(0, _method("connection.close", reply_code=320, reply_text="bye"))
    close_ok = _method("connection.close-ok")
    wire = _HEADER + _PUBLISH + _method_frame(0, close_ok.encode())
    assert server.receive_data(wire) == [MethodReceived(0, close_ok)]
    assert server.closed
