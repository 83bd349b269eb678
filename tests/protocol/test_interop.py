"""Interop with real clients' codecs: pika and pamqp frames decode here, ours decode there."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pamqp.body
import pamqp.commands
import pamqp.frame
import pamqp.header
import pika.frame
import pika.spec
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import SPEC_0_9_1, Connection
from amqp_protocol.events import ContentReceived, MethodReceived
from tests.protocol.strategies import UTC, datetimes, decimals

Props = SPEC_0_9_1.properties("basic")
HEADERS: dict[str, Any] = {
    "str": "grüße",
    "bytes": b"\x00\xff",
    "true": True,
    "false": False,
    "int32": -(2**31),
    "int64": 2**62,
    "decimal": decimal.Decimal("-12.345"),
    "nested": {"list": [1, "two", None, [3]], "empty": {}},
    "void": None,
}
STAMP = datetime.datetime(2024, 2, 29, 12, 30, 0, tzinfo=UTC)
ALL_PROPERTIES: dict[str, Any] = {
    "content_type": "application/json",
    "content_encoding": "gzip",
    "delivery_mode": 2,
    "priority": 9,
    "correlation_id": "corr",
    "reply_to": "amq.rabbitmq.reply-to",
    "expiration": "60000",
    "message_id": "id-1",
    "timestamp": 1_700_000_000,
    "type": "order.created",
    "user_id": "guest",
    "app_id": "tests",
}


def _server(channel: int = 1) -> Connection:
    server = Connection("server", SPEC_0_9_1)
    open_frame = Connection("client", SPEC_0_9_1).send_method(
        channel, SPEC_0_9_1.method("channel.open")()
    )
    server.receive_data(SPEC_0_9_1.protocol_header + open_frame)
    return server


def _pika_decode_all(wire: bytes) -> list[Any]:
    out = []
    while wire:
        used, frame = pika.frame.decode_frame(wire)
        assert used, "pika could not decode a whole frame"
        out.append(frame)
        wire = wire[used:]
    return out


def _pika_message(method: Any, props: pika.spec.BasicProperties, body: bytes) -> bytes:
    return b"".join(
        [
            pika.frame.Method(1, method).marshal(),
            pika.frame.Header(1, len(body), props).marshal(),
            pika.frame.Body(1, body).marshal(),
        ]
    )


def test_pika_publish_with_every_property_decodes_here() -> None:
    pika_props = pika.spec.BasicProperties(
        **ALL_PROPERTIES, headers={**HEADERS, "stamp": STAMP}, cluster_id="c1"
    )
    method = pika.spec.Basic.Publish(exchange="ex", routing_key="rk", mandatory=True)
    events = _server().receive_data(_pika_message(method, pika_props, b"hello"))
    expected_props = Props(**ALL_PROPERTIES, headers={**HEADERS, "stamp": STAMP}, reserved="c1")
    expected = SPEC_0_9_1.method("basic.publish")(exchange="ex", routing_key="rk", mandatory=True)
    assert events == [ContentReceived(1, expected, expected_props, b"hello")]


def test_our_deliver_decodes_in_pika_with_equal_values() -> None:
    deliver = SPEC_0_9_1.method("basic.deliver")(
        consumer_tag="ctag", delivery_tag=2**40, redelivered=True, exchange="ex", routing_key="r"
    )
    props = Props(**ALL_PROPERTIES, headers={**HEADERS, "stamp": STAMP}, reserved="c1")
    server = Connection("server", SPEC_0_9_1)
    server.frame_max = 4096
    body = bytes(range(256)) * 20
    method_frame, header_frame, *body_frames = _pika_decode_all(
        server.send_content(1, deliver, props, body)
    )
    assert vars(method_frame.method) == {
        "consumer_tag": "ctag",
        "delivery_tag": 2**40,
        "redelivered": True,
        "exchange": "ex",
        "routing_key": "r",
    }
    got = header_frame.properties
    assert header_frame.body_size == len(body)
    assert {k: getattr(got, k) for k in ALL_PROPERTIES} == ALL_PROPERTIES
    assert got.cluster_id == "c1"
    assert got.headers == {**HEADERS, "stamp": STAMP}
    assert b"".join(f.fragment for f in body_frames) == body


def test_our_methods_decode_in_pika() -> None:
    declare = SPEC_0_9_1.method("queue.declare")(
        queue="q", durable=True, auto_delete=True, arguments={"x-max-length": 10}
    )
    (frame,) = _pika_decode_all(Connection("client", SPEC_0_9_1).send_method(1, declare))
    assert isinstance(frame.method, pika.spec.Queue.Declare)
    assert (frame.method.queue, frame.method.durable, frame.method.auto_delete) == ("q", 1, 1)
    assert frame.method.arguments == {"x-max-length": 10}


pika_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        decimals,
        st.text(max_size=20),
        st.binary(max_size=20),
    ),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(headers=st.dictionaries(st.text(max_size=20), pika_values, max_size=6), stamp=datetimes)
def test_headers_tables_agree_with_pika_both_ways(headers: dict[str, Any], stamp: Any) -> None:
    headers = {**headers, "stamp": stamp}
    ours = Props(headers=headers).encode_header(0)
    (theirs,) = _pika_decode_all(
        pika.frame.Header(1, 0, pika.spec.BasicProperties(headers=headers)).marshal()
    )
    assert _pika_decode_all(_frame(2, ours))[0].properties.headers == headers
    assert Props.decode(theirs.marshal()[7:-1], 12) == Props(headers=headers)


def _frame(frame_type: int, payload: bytes) -> bytes:
    return (
        bytes([frame_type])
        + (1).to_bytes(2, "big")
        + len(payload).to_bytes(4, "big")
        + payload
        + b"\xce"
    )


def test_pamqp_frames_decode_here_and_ours_in_pamqp() -> None:
    publish = pamqp.commands.Basic.Publish(exchange="ex", routing_key="rk")
    pamqp_props = pamqp.commands.Basic.Properties(
        content_type="text/plain", delivery_mode=1, headers={"a": "b"}, message_id="m"
    )
    wire = b"".join(
        [
            pamqp.frame.marshal(publish, 1),
            pamqp.frame.marshal(pamqp.header.ContentHeader(0, 3, pamqp_props), 1),
            pamqp.frame.marshal(pamqp.body.ContentBody(b"abc"), 1),
        ]
    )
    props = Props(content_type="text/plain", delivery_mode=1, headers={"a": "b"}, message_id="m")
    ours = SPEC_0_9_1.method("basic.publish")(exchange="ex", routing_key="rk")
    assert _server().receive_data(wire) == [ContentReceived(1, ours, props, b"abc")]

    ack = SPEC_0_9_1.method("basic.ack")(delivery_tag=7, multiple=True)
    out = Connection("client", SPEC_0_9_1).send_method(1, ack)
    used, channel, frame = pamqp.frame.unmarshal(out)
    assert (used, channel) == (len(out), 1)
    assert isinstance(frame, pamqp.commands.Basic.Ack)
    assert (frame.delivery_tag, frame.multiple) == (7, True)


def test_pamqp_method_on_channel_zero_decodes_here() -> None:
    tune = pamqp.commands.Connection.TuneOk(channel_max=2047, frame_max=131072, heartbeat=60)
    events = _server().receive_data(pamqp.frame.marshal(tune, 0))
    expected = SPEC_0_9_1.method("connection.tune-ok")(
        channel_max=2047, frame_max=131072, heartbeat=60
    )
    assert events == [MethodReceived(0, expected)]
