"""Deliveries as columns (``Connection.deliver_as_columns``): the same deliveries as the frame
by frame path, in runs, whatever the byte stream's cuts; faulty frames still get their codes."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import SPEC_0_9_1, Connection, errors
from amqp_protocol.events import ContentReceived, DeliveriesReceived, Event, MethodReceived
from tests.protocol.test_connection import feed_in_pieces

SPEC = SPEC_0_9_1
Deliver = SPEC.method("basic.deliver")
Props = SPEC.properties("basic")

#: A delivery as both paths can report it: tag, consumer tag, redelivered, exchange, routing
#: key, properties, body.
Row = tuple[int, str, bool, str, str, Any, bytes]


def _client(*columnar: int, frame_max: int = 131072) -> Connection:
    """A client with channels 1 and 2 open; ``columnar`` take their deliveries as columns."""
    client = Connection("client", SPEC)
    client.initiate()
    client.frame_max = frame_max
    for channel in (1, 2):
        client.send_method(channel, SPEC.method("channel.open")())
    for channel in columnar:
        client.deliver_as_columns(channel)
    return client


def _server(frame_max: int = 131072) -> Connection:
    server = Connection("server", SPEC)
    server.frame_max = frame_max
    return server


def _rows(events: list[Event]) -> list[tuple[int, Row | Any]]:
    """Each delivery as (channel, row), each other event as (channel, method name)."""
    out: list[tuple[int, Row | Any]] = []
    for e in events:
        if isinstance(e, DeliveriesReceived):
            c = e.columns
            for tag, kind, body in zip(c.tags, c.kinds, c.bodies, strict=True):
                k = c.distinct[kind]
                row = (tag, k.consumer_tag, k.redelivered, k.exchange, k.routing_key)
                out.append((e.channel, (*row, k.properties, body)))
        elif isinstance(e, ContentReceived) and e.method.NAME == "basic.deliver":
            m: Any = e.method
            row = (m.delivery_tag, m.consumer_tag, m.redelivered, m.exchange, m.routing_key)
            out.append((e.channel, (*row, e.properties, e.body)))
        elif isinstance(e, ContentReceived | MethodReceived):
            out.append((e.channel, e.method.NAME))
    return out


def _deliveries(
    server: Connection, specs: list[tuple[int, int, bytes, str, bool]], consumers: int = 1
) -> bytes:
    """basic.deliver contents: (channel, tag, body, routing key, with properties) each, for
    ``consumers`` consumers taking turns."""
    wire = b""
    for channel, tag, body, key, with_props in specs:
        props = Props(message_id=f"m{tag % 3}", headers={"n": tag % 2}) if with_props else Props()
        deliver = Deliver(
            consumer_tag=f"ctag-{tag % consumers}",
            delivery_tag=tag,
            redelivered=tag % 5 == 0,
            routing_key=key,
        )
        wire += server.send_content(channel, deliver, props, body)
    return wire


deliveries = st.lists(
    st.tuples(
        st.sampled_from([1, 1, 1, 2]),
        st.binary(max_size=300),
        st.sampled_from(["k", "orders.eu", ""]),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(specs=deliveries, consumers=st.integers(1, 7), data=st.data())
def test_columns_hold_the_deliveries_the_frame_by_frame_path_reads(
    specs: list[tuple[int, bytes, str, bool]], consumers: int, data: st.DataObject
) -> None:
    """Whatever the cuts (one byte at a time included) and however many consumers take turns,
    a columnar channel gets the same deliveries, in the same order relative to the other
    channel's, as a plain one; bodies over frame-max (several body frames) come as runs of
    one."""
    server = _server(frame_max=200)
    numbered = [(ch, tag, body, key, p) for tag, (ch, body, key, p) in enumerate(specs, start=1)]
    wire = _deliveries(server, numbered, consumers)
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=20))
    plain = _rows(feed_in_pieces(_client(frame_max=200), wire, cuts))
    columnar = _rows(feed_in_pieces(_client(1, frame_max=200), wire, cuts))
    assert columnar == plain
    assert [tag for _, (tag, *_rest) in columnar] == list(range(1, len(specs) + 1))


def test_deliveries_that_share_all_but_tag_and_body_share_one_kind() -> None:
    server, client = _server(), _client(1)
    wire = _deliveries(server, [(1, tag, b"x" * tag, "k", False) for tag in range(1, 101)])
    (run,) = client.receive_data(wire)
    assert isinstance(run, DeliveriesReceived)
    assert run.columns.tags == list(range(1, 101))
    assert run.columns.bodies == [b"x" * tag for tag in range(1, 101)]
    assert len(run.columns.distinct) == 2  # tag 5, 10, ... are marked redelivered
    assert run.columns.kinds == [1 if tag % 5 == 0 else 0 for tag in range(1, 101)]


def test_consumers_taking_turns_keep_their_kinds() -> None:
    server, client = _server(), _client(1)
    specs = [(1, tag, b"x", "k", False) for tag in range(1, 61)]
    (run,) = client.receive_data(_deliveries(server, specs, consumers=3))
    c = run.columns  # type: ignore[union-attr]
    assert [c.distinct[k].consumer_tag for k in c.kinds] == [f"ctag-{t % 3}" for t in range(1, 61)]
    assert len(c.distinct) == 6  # three consumers, redelivered or not


def test_a_run_waits_for_a_delivery_cut_in_its_middle() -> None:
    server, client = _server(), _client(1)
    wire = _deliveries(server, [(1, 1, b"a" * 50, "k", True), (1, 2, b"b" * 50, "k", True)])
    first = client.receive_data(wire[:-10])
    rest = client.receive_data(wire[-10:])
    assert [len(e.columns) for e in first + rest if isinstance(e, DeliveriesReceived)] == [1, 1]


def test_other_methods_on_a_columnar_channel_keep_their_order() -> None:
    server, client = _server(), _client(1)
    wire = (
        _deliveries(server, [(1, 1, b"a", "k", False)])
        + server.send_method(1, SPEC.method("basic.cancel")(consumer_tag="ctag"))
        + _deliveries(server, [(1, 2, b"b", "k", False)])
    )
    kinds = [type(e).__name__ for e in client.receive_data(wire)]
    assert kinds == ["DeliveriesReceived", "MethodReceived", "DeliveriesReceived"]


def _without_method_frame(wire: bytes) -> bytes:
    (size,) = struct.unpack_from(">I", wire, 3)
    return wire[8 + size :]


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (lambda wire: wire[:-1] + b"\x00", 501),  # the last frame's frame-end octet
        (_without_method_frame, 505),  # a content header with no method before it
    ],
)
def test_a_faulty_frame_after_deliveries_gets_its_code_and_the_run_before_it_is_kept(
    fault: Any, code: int
) -> None:
    server = _server()
    good = _deliveries(server, [(1, 1, b"a", "k", False), (1, 2, b"b", "k", False)])
    bad = fault(_deliveries(server, [(1, 3, b"", "k", False)]))
    with pytest.raises(errors.AMQPError) as caught:
        _client(1).receive_data(good + bad)
    assert caught.value.reply_code == code
    kept = getattr(caught.value, "events", [])
    assert [t for e in kept if isinstance(e, DeliveriesReceived) for t in e.columns.tags] == [1, 2]


def test_a_closed_channel_reopened_takes_its_deliveries_frame_by_frame() -> None:
    server, client = _server(), _client(1)
    client.send_method(1, SPEC.method("channel.close")(reply_code=200))
    client.receive_data(server.send_method(1, SPEC.method("channel.close-ok")()))
    client.send_method(1, SPEC.method("channel.open")())
    events = client.receive_data(_deliveries(server, [(1, 1, b"a", "k", False)]))
    assert [type(e) for e in events] == [ContentReceived]
