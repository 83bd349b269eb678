"""Publisher confirms owed on a channel go out before its channel.close-ok (or the broker's
channel.close), never after it: a client that has forgotten the channel would see
"frame on unknown channel: basic.ack" (or take them for its next channel of that number).
RabbitMQ 4 sends them first (measured on 4.0.5)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from urllib.parse import urlsplit

from amqp_protocol import SPEC_0_9_1, Connection, Method
from amqp_protocol.generated.spec_0_9_1 import BasicAck
from testbed.raw_client import M, call, open_raw

PROPERTIES = SPEC_0_9_1.properties("basic")()


def _confirming_channel(broker_url: str) -> tuple[socket.socket, Connection]:
    port = urlsplit(broker_url).port
    assert port is not None
    sock, conn = open_raw(port)
    call(sock, conn, 1, M("channel.open")())
    assert call(sock, conn, 1, M("confirm.select")()).NAME == "confirm.select-ok"
    return sock, conn


def _publish(conn: Connection, exchange: str = "") -> bytes:
    method = M("basic.publish")(exchange=exchange, routing_key="no-queue-has-this-key")
    return conn.send_content(1, method, PROPERTIES, b"body")


def _methods(sock: socket.socket) -> Iterator[tuple[int, Method]]:
    """Every method the broker sends, with its channel, decoded here: the protocol layer's
    client discards what follows its own channel.close, which is what these tests check.
    Bounded by the socket's timeout."""
    data = b""
    while True:
        data += sock.recv(65536)
        while len(data) >= 7:
            kind, channel, size = struct.unpack_from(">BHI", data)
            if len(data) < 8 + size:
                break
            payload, data = data[7 : 7 + size], data[8 + size :]
            assert kind == 1, f"frame type {kind} on channel {channel}"
            class_id, method_id = struct.unpack_from(">HH", payload)
            method_class = SPEC_0_9_1.method_by_id(class_id, method_id)
            assert method_class is not None, (class_id, method_id)
            yield channel, method_class.decode(payload, 4)[0]


def _until(methods: Iterator[tuple[int, Method]], name: str) -> list[Method]:
    """The methods on channel 1 up to and with the first named ``name``."""
    received = []
    for channel, method in methods:
        assert channel == 1, (channel, method)
        received.append(method)
        if name == method.NAME:
            return received
    raise AssertionError(f"no {name}")


def _after_close(
    sock: socket.socket, conn: Connection, methods: Iterator[tuple[int, Method]]
) -> list[str]:
    """Open channel 1 again: what came on it between the close and the new open-ok
    (nothing is the rule; the old channel's frames are all sent before it is forgotten)."""
    sock.sendall(conn.send_method(1, M("channel.open")()))
    return [m.NAME for m in _until(methods, "channel.open-ok")[:-1]]


def _acked(methods: list[Method]) -> int:
    """The highest delivery tag the basic.acks among ``methods`` confirm."""
    return max((m.delivery_tag for m in methods if isinstance(m, BasicAck)), default=0)


def test_confirms_of_publishes_before_a_channel_close_come_before_its_close_ok(
    broker_url: str,
) -> None:
    sock, conn = _confirming_channel(broker_url)
    with sock:
        close = conn.send_method(1, M("channel.close")(reply_code=200, reply_text="bye"))
        sock.sendall(_publish(conn) * 3 + close)
        methods = _methods(sock)
        before = _until(methods, "channel.close-ok")
        assert {m.NAME for m in before[:-1]} == {"basic.ack"} and _acked(before) == 3
        assert _after_close(sock, conn, methods) == []


def test_confirms_of_publishes_before_a_channel_error_come_before_its_close(
    broker_url: str,
) -> None:
    sock, conn = _confirming_channel(broker_url)
    with sock:
        sock.sendall(_publish(conn) * 2 + _publish(conn, exchange="no-such-exchange"))
        methods = _methods(sock)
        before = _until(methods, "channel.close")
        assert {m.NAME for m in before[:-1]} == {"basic.ack"} and _acked(before) == 2
        sock.sendall(conn.send_method(1, M("channel.close-ok")()))
        assert _after_close(sock, conn, methods) == []
