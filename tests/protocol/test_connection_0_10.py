"""The sans-IO Connection speaking the transitional 0-10 draft: a client negotiating it and
using sessions, the draft's request and response frames (types 9 and 10), its malformed
input and the rules of the draft that the protocol layer keeps."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import KNOWN_SPECS, SPEC_0_9_1, SPEC_0_10, Connection, Method, errors
from amqp_protocol import frames as fr
from amqp_protocol.events import (
    ContentReceived,
    Event,
    MethodReceived,
    ProtocolHeaderReceived,
    RequestReceived,
    ResponseReceived,
    UnsupportedProtocol,
)
from amqp_protocol.values import Content
from tests.protocol.strategies import methods_of

SPEC = SPEC_0_10


def _method(name: str, **fields: Any) -> Any:
    return SPEC.method(name)(**fields)


def _frame(frame_type: int, channel: int, payload: bytes, end: bytes = b"\xce") -> bytes:
    return fr.FRAME_HEADER.pack(frame_type, channel, len(payload)) + payload + end


def _pair(*sessions: int) -> tuple[Connection, Connection]:
    """A 0-10 client and a server that read its header, with a session opened on each of
    ``sessions`` (both sides saw session.open and session.attached)."""
    client = Connection("client", SPEC)
    server = Connection("server", supported=KNOWN_SPECS)
    assert server.receive_data(client.initiate()) == [ProtocolHeaderReceived(SPEC)]
    for channel in sessions:
        server.receive_data(client.send_method(channel, _method("session.open")))
        client.receive_data(server.send_method(channel, _method("session.attached")))
    return client, server


def _exchange(sender: Connection, receiver: Connection, channel: int, method: Method) -> Event:
    (event,) = receiver.receive_data(sender.send_method(channel, method))
    return event


# -- negotiation and a client session -----------------------------------------------------------


def test_client_negotiates_0_10_and_opens_a_connection() -> None:
    client, server = _pair()
    start = _method(
        "connection.start",
        version_major=0,
        version_minor=10,
        server_properties={"product": "test"},
        mechanisms=b"PLAIN",
        locales=b"en_US",
    )
    assert _exchange(server, client, 0, start) == MethodReceived(0, start)
    for sender, receiver, method in [
        (client, server, _method("connection.start-ok", mechanism="PLAIN", response=b"\0g\0g")),
        (server, client, _method("connection.tune", channel_max=8, frame_max=4096)),
        (client, server, _method("connection.tune-ok", channel_max=8, frame_max=4096)),
        (client, server, _method("connection.open", virtual_host="/")),
        (server, client, _method("connection.open-ok")),
    ]:
        assert _exchange(sender, receiver, 0, method) == MethodReceived(0, method)


def test_a_server_offering_only_the_0_9_family_refuses_the_draft() -> None:
    """Rule connection.start protocol-name: a server that cannot support the header's
    protocol answers with the header of one it does and closes."""
    client = Connection("client", SPEC)
    server = Connection("server")
    assert server.receive_data(client.initiate()) == [
        UnsupportedProtocol(SPEC.protocol_header, SPEC_0_9_1.protocol_header)
    ]
    assert server.closed
    assert client.receive_data(SPEC_0_9_1.protocol_header) == [
        UnsupportedProtocol(SPEC_0_9_1.protocol_header, b"")
    ]


def test_a_session_carries_message_transfers_both_ways() -> None:
    client, server = _pair()
    session_id = uuid.uuid4()
    open_ = _method("session.open", detached_lifetime=30)
    attached = _method("session.attached", session_id=session_id, detached_lifetime=30)
    assert _exchange(client, server, 1, open_) == MethodReceived(1, open_)
    assert _exchange(server, client, 1, attached) == MethodReceived(1, attached)
    assert 1 in client.open_channels and 1 in server.open_channels
    transfer = _method(
        "message.transfer",
        destination="amq.direct",
        routing_key="orders",
        content_type="text/plain",
        application_headers={"n": 1, "id": uuid.UUID(int=7)},
        body=Content(b"hello"),
    )
    assert _exchange(client, server, 1, transfer) == MethodReceived(1, transfer)
    assert _exchange(server, client, 1, transfer) == MethodReceived(1, transfer)


def test_a_suspended_session_leaves_its_channel_and_resumes_on_another() -> None:
    client, server = _pair(1)
    session_id = uuid.uuid4()
    suspend = _method("session.suspend")
    assert _exchange(client, server, 1, suspend) == MethodReceived(1, suspend)
    # Rule channel.close stability, for the draft's session: after asking to suspend, the
    # client takes only the session's closing methods on that channel.
    late = server.send_method(1, _method("message.transfer", body=Content(b"late")))
    detached = _method("session.detached")
    assert client.receive_data(late + server.send_method(1, detached)) == [
        MethodReceived(1, detached)
    ]
    assert 1 not in client.open_channels and 1 not in server.open_channels
    resume = _method("session.resume", session_id=session_id)
    assert _exchange(client, server, 2, resume) == MethodReceived(2, resume)
    attached = _method("session.attached", session_id=session_id)
    assert _exchange(server, client, 2, attached) == MethodReceived(2, attached)
    assert 2 in client.open_channels


def test_a_server_closing_a_session_closes_its_channel() -> None:
    client, server = _pair(1)
    closed = _method("session.closed", reply_code=320, reply_text="forced")
    assert _exchange(server, client, 1, closed) == MethodReceived(1, closed)
    assert 1 not in client.open_channels and 1 not in server.open_channels
    with pytest.raises(errors.ChannelError):
        server.receive_data(client.send_method(1, _method("message.transfer")))


# -- request and response frames ------------------------------------------------------------------


def test_a_request_frame_is_its_ids_then_a_method() -> None:
    client, _ = _pair(1)
    flush = _method("execution.flush")
    wire = client.send_request(1, flush, request_id=7, response_mark=3)
    assert wire == _frame(9, 1, struct.pack(">QQI", 7, 3, 0) + flush.encode())


def test_a_response_frame_is_its_ids_then_a_method() -> None:
    _, server = _pair(1)
    complete = _method("execution.complete", cumulative_execution_mark=7)
    wire = server.send_response(1, complete, response_id=4, request_id=7, batch_offset=2)
    assert wire == _frame(10, 1, struct.pack(">QQI", 4, 7, 2) + complete.encode())


#: The methods that may travel on an open channel and carry no content frames.
CHANNEL_METHODS = [
    pytest.param(cls, id=name)
    for name, cls in sorted(SPEC.methods.items())
    if cls.CLASS_ID > 21 and not cls.HAS_CONTENT
]


@pytest.mark.parametrize("cls", CHANNEL_METHODS)
@settings(max_examples=10, deadline=None)
@given(data=st.data(), ids=st.tuples(*[st.integers(0, 2**64 - 1)] * 2, st.integers(0, 2**32 - 1)))
def test_every_method_round_trips_in_request_and_response_frames(
    cls: type[Method], data: st.DataObject, ids: tuple[int, int, int]
) -> None:
    client, server = _pair(1)
    method = data.draw(methods_of(cls))
    first, second, third = ids
    assert server.receive_data(client.send_request(1, method, first, second)) == [
        RequestReceived(first, second, MethodReceived(1, method))
    ]
    assert client.receive_data(server.send_response(1, method, first, second, third)) == [
        ResponseReceived(first, second, third, MethodReceived(1, method))
    ]


def test_a_content_method_in_a_request_frame_arrives_with_its_content() -> None:
    client, server = _pair(1)
    publish = _method("basic.publish", exchange="amq.direct", routing_key="k")
    properties = SPEC.properties("basic")(content_type="text/plain", headers={"n": 2})
    content = client.send_content(1, publish, properties, b"body")
    method_frame_end = 7 + len(publish.encode()) + 1
    wire = client.send_request(1, publish, request_id=5) + content[method_frame_end:]
    for cut in (len(wire), 40):  # whole, and split in the middle of the header frame
        _, server = _pair(1)
        events = server.receive_data(wire[:cut]) + server.receive_data(wire[cut:])
        assert events == [RequestReceived(5, 0, ContentReceived(1, publish, properties, b"body"))]


def test_request_ids_beyond_their_longlong_are_a_syntax_error() -> None:
    client, _ = _pair(1)
    with pytest.raises(errors.SyntaxError_):
        client.send_request(1, _method("execution.flush"), request_id=2**64)


def test_a_0_9_1_connection_has_no_request_frames() -> None:
    client = Connection("client", SPEC_0_9_1)
    with pytest.raises(ValueError, match="no request or response frames"):
        client.send_request(1, SPEC_0_9_1.method("basic.qos")(), request_id=1)


# -- malformed input ---------------------------------------------------------------------------

_TRANSFER = _method("message.transfer", routing_key="k", body=Content(b"x")).encode()

VIOLATIONS = {
    "request frame shorter than its ids": (502, _frame(9, 1, b"\x00" * 19)),
    "response frame shorter than its ids": (502, _frame(10, 1, b"\x00" * 12)),
    "request frame with its method cut short": (
        502,
        _frame(9, 1, struct.pack(">QQI", 1, 0, 0) + _TRANSFER[:-3]),
    ),
    "bad frame-end": (501, _frame(1, 1, _TRANSFER, end=b"\x00")),
    "frame type the draft lacks": (501, _frame(11, 1, b"")),
    "frame over frame-max": (501, _frame(3, 1, b"x" * 131072)),
    "method of 0-9 the draft dropped (exchange.declare-ok)": (
        503,
        _frame(1, 1, b"\x00\x28\x00\x0b"),
    ),
    "0-9 type letter in a field table": (
        502,
        _frame(
            1,
            1,
            _method("queue.declare", arguments={"a": "b"}).encode().replace(b"\xa5", b"S"),
        ),
    ),
    "session-id cut short": (502, _frame(1, 2, _method("session.resume").encode()[:-1])),
    "rfc1982-long-set of half a pair": (
        502,
        _frame(1, 1, struct.pack(">HHIHI", 20, 110, 0, 4, 1)),
    ),
    "method on a channel without a session": (504, _frame(1, 3, _TRANSFER)),
    # The draft has no 505 unexpected-frame: a frame out of sequence is 503 command-invalid.
    "content header without its method": (
        503,
        _frame(2, 1, SPEC.properties("basic")().encode_header(3)),
    ),
    "content body without its header": (
        503,
        _frame(1, 1, _method("basic.publish").encode()) + _frame(3, 1, b"abc"),
    ),
    "method in the middle of content": (
        503,
        _frame(1, 1, _method("basic.publish").encode()) + _frame(1, 1, _TRANSFER),
    ),
}


@pytest.mark.parametrize(("code", "wire"), VIOLATIONS.values(), ids=VIOLATIONS.keys())
def test_malformed_0_10_input_raises_the_drafts_reply_code(code: int, wire: bytes) -> None:
    _, server = _pair(1)
    with pytest.raises(errors.AMQPError) as caught:
        server.receive_data(wire)
    assert caught.value.reply_code == code
    assert caught.value.reply_code in {value for value, _ in SPEC.constants.values()}


def test_a_truncated_frame_waits_for_the_rest() -> None:
    client, server = _pair(1)
    wire = client.send_request(1, _method("execution.flush"), request_id=1)
    for cut in range(1, len(wire)):
        _, server = _pair(1)
        assert server.receive_data(wire[:cut]) == []
        assert len(server.receive_data(wire[cut:])) == 1


# -- rules -------------------------------------------------------------------------------------


def test_rule_session_open_channel_busy() -> None:
    """session.open on a channel already attached to a session is a connection exception."""
    client, server = _pair(1)
    with pytest.raises(errors.ChannelError) as caught:
        server.receive_data(client.send_method(1, _method("session.open")))
    assert caught.value.hard and SPEC.constants["channel-error"] == (504, "hard-error")


def test_rule_channel_open_state() -> None:
    """The client MUST NOT use channel.open on an already-opened channel (class 21)."""
    client, server = _pair()
    server.receive_data(client.send_method(1, _method("channel.open")))
    with pytest.raises(errors.ChannelError):
        server.receive_data(client.send_method(1, _method("channel.open")))


def test_rule_channel_close_stability() -> None:
    """After sending channel.close any received method but close-ok is discarded."""
    client, server = _pair()
    server.receive_data(client.send_method(1, _method("channel.open")))
    server.send_method(1, _method("channel.close", reply_code=406, reply_text="x"))
    close_ok = _method("channel.close-ok")
    late = client.send_method(1, _method("message.transfer"))
    assert server.receive_data(late + client.send_method(1, close_ok)) == [
        MethodReceived(1, close_ok)
    ]
    assert 1 not in server.open_channels


def test_rule_connection_close_stability() -> None:
    """After sending connection.close any received method but close-ok is discarded."""
    client, server = _pair(1)
    server.send_method(0, _method("connection.close", reply_code=320, reply_text="bye"))
    close_ok = _method("connection.close-ok")
    wire = client.send_request(1, _method("execution.flush"), 1) + client.send_method(0, close_ok)
    assert server.receive_data(wire) == [MethodReceived(0, close_ok)]
    assert server.closed


def test_rule_connection_tune_frame_max_minimum() -> None:
    """Until frame-max is negotiated, frames of up to frame-min-size octets are accepted."""
    client, server = _pair(1)
    assert SPEC.constant("frame-min-size") == fr.FRAME_MIN_SIZE
    bare = _method("message.transfer", body=Content(b"")).encode()
    body = b"x" * (fr.FRAME_MIN_SIZE - fr.FRAME_OVERHEAD - len(bare))
    transfer = _method("message.transfer", body=Content(body))
    wire = client.send_method(1, transfer)
    assert len(wire) == fr.FRAME_MIN_SIZE
    assert server.receive_data(wire) == [MethodReceived(1, transfer)]
