"""Deliveries kept encoded (``Connection.keep_deliveries_encoded``) and decoded elsewhere
(``contents.decode_contents``): the same messages as the decoding path, whatever the reads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_spark.protocol import SPEC_0_9_1, Connection, errors
from amqp_spark.protocol.contents import decode_contents
from amqp_spark.protocol.events import (
    ContentReceived,
    EncodedDeliveryReceived,
    Event,
    MethodReceived,
)

SPEC = SPEC_0_9_1
Deliver = SPEC.method("basic.deliver")
Props = SPEC.properties("basic")
FRAME_MAX = 4096


def _client(*encoded: int) -> Connection:
    """A client with channels 1 and 2 open, keeping deliveries encoded on ``encoded``."""
    client = Connection("client", SPEC, frame_max=FRAME_MAX)
    server = Connection("server", SPEC, frame_max=FRAME_MAX)
    for ch in (1, 2):
        client.send_method(ch, SPEC.method("channel.open")())
        events = client.receive_data(server.send_method(ch, SPEC.method("channel.open-ok")()))
        assert events == [MethodReceived(ch, SPEC.method("channel.open-ok")())]
        client.keep_deliveries_encoded(ch, ch in encoded)
    return client


def _delivery(channel: int, tag: int, body: bytes, **props: Any) -> bytes:
    server = Connection("server", SPEC, frame_max=FRAME_MAX)
    method = Deliver(consumer_tag="ctag", delivery_tag=tag, exchange="ex", routing_key=f"k{tag}")
    return server.send_content(channel, method, Props(**props), body)


def _contents(events: list[Event]) -> list[tuple[Any, Any, bytes]]:
    """(method, properties, body) of every delivery in ``events``, decoding encoded ones."""
    out: list[tuple[Any, Any, bytes]] = []
    for e in events:
        if isinstance(e, EncodedDeliveryReceived):
            ((method, properties, body),) = decode_contents(SPEC, e.frames)
            assert (e.delivery_tag, e.body_size) == (method.delivery_tag, len(body))
            out.append((method, properties, body))
        elif isinstance(e, ContentReceived):
            out.append((e.method, e.properties, e.body))
    return out


def test_a_delivery_whole_in_one_read_arrives_as_its_frames() -> None:
    wire = _delivery(1, 7, b"hello", content_type="text/plain", headers={"a": 1})

    (event,) = _client(1).receive_data(wire)

    assert event == EncodedDeliveryReceived(1, 7, 5, wire)


def test_channels_not_marked_keep_decoding_their_deliveries() -> None:
    events = _client(1).receive_data(_delivery(2, 3, b"x"))

    assert [type(e) for e in events] == [ContentReceived]


def test_other_methods_on_a_marked_channel_arrive_decoded() -> None:
    server = Connection("server", SPEC, frame_max=FRAME_MAX)
    ok = SPEC.method("basic.consume-ok")(consumer_tag="ctag")
    get_ok = SPEC.method("basic.get-ok")(delivery_tag=1, routing_key="k", message_count=0)
    wire = server.send_method(1, ok) + server.send_content(1, get_ok, Props(), b"g")

    events = _client(1).receive_data(wire)

    assert events == [MethodReceived(1, ok), ContentReceived(1, get_ok, Props(), b"g")]


@settings(max_examples=150, deadline=None)
@given(
    bodies=st.lists(
        st.one_of(st.binary(max_size=200), st.just(b""), st.just(bytes(3 * FRAME_MAX))),
        min_size=1,
        max_size=5,
    ),
    data=st.data(),
)
def test_every_delivery_arrives_once_in_order_whatever_the_reads(
    bodies: list[bytes], data: st.DataObject
) -> None:
    """Cut anywhere, a delivery takes the decoding path and arrives as ContentReceived;
    either way the messages are the ones sent, in order."""
    wire = b"".join(
        _delivery(1, tag, body, priority=tag % 10) for tag, body in enumerate(bodies, 1)
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=4)))
    client = _client(1)

    events: list[Event] = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        events += client.receive_data(wire[start:end])

    got = _contents(events)
    assert [m.delivery_tag for m, _, _ in got] == list(range(1, len(bodies) + 1))
    assert [b for _, _, b in got] == bodies
    assert [p.priority for _, p, _ in got] == [tag % 10 for tag in range(1, len(bodies) + 1)]


def test_a_faulty_frame_on_a_marked_channel_gets_the_same_error_as_elsewhere() -> None:
    wire = bytearray(_delivery(1, 1, b"body"))
    wire[-1] = 0x00  # the body frame's frame-end octet

    with pytest.raises(errors.AMQPError) as encoded:
        _client(1).receive_data(bytes(wire))
    with pytest.raises(errors.AMQPError) as decoded:
        _client().receive_data(bytes(wire))

    assert encoded.value.reply_code == decoded.value.reply_code == 501


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda w: w[:-3], id="cut short"),
        pytest.param(lambda w: w[:-1] + b"\x00", id="frame-end octet wrong"),
        pytest.param(lambda w: w[1:], id="not starting at a frame"),
    ],
)
def test_decoding_damaged_frames_raises_a_protocol_error(damage: Any) -> None:
    wire = _delivery(1, 1, b"body") + _delivery(1, 2, b"more")

    with pytest.raises(errors.AMQPError):
        decode_contents(SPEC, damage(wire))
