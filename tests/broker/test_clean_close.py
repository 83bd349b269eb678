"""A clean close stays clean for a client still writing after its connection.close: the
broker answers close-ok and reads on, discarding, until the client closes its end, as
RabbitMQ 4.0.5 does (issue 29: Node's amqplib sends its close on channel 0 ahead of a
channel's buffered publishes; a broker that closed the socket at once made its writes fail
and its close never complete). What the client sent after its close is not routed; a frame
larger than the agreed ``frame_max`` ends the wait at once (RabbitMQ's bound on what it
reads; its bound in time, 30 s, is ``after_close.CLOSING_TIMEOUT``, measured in
docs/measurements/clean-close.md). Both tests run against the bundled broker and RabbitMQ."""

from __future__ import annotations

import socket
import struct
import time
from urllib.parse import urlsplit

from pika.adapters.blocking_connection import BlockingChannel

from amqp_protocol import SPEC_0_9_1, Connection
from broker.server.after_close import CLOSING_TIMEOUT, closing_seconds
from testbed.raw_client import M, call, open_raw

PROPERTIES = SPEC_0_9_1.properties("basic")()
CLOSE_OK = b"\x00\x0a\x00\x33"  # connection class 10, method close-ok 51


def _publishing(broker_url: str, queue: str) -> tuple[socket.socket, Connection]:
    port = urlsplit(broker_url).port
    assert port is not None
    sock, conn = open_raw(port)
    call(sock, conn, 1, M("channel.open")())
    call(sock, conn, 1, M("queue.declare")(queue=queue))
    return sock, conn


def _publish(conn: Connection, queue: str) -> bytes:
    return conn.send_content(1, M("basic.publish")(routing_key=queue), PROPERTIES, b"x" * 100)


def _count(channel: BlockingChannel, queue: str, expected: int) -> int:
    """The queue's message count once it is ``expected`` or 2 s passed (RabbitMQ counts
    publishes of another connection a moment later)."""
    deadline = time.monotonic() + 2
    while True:
        count: int = channel.queue_declare(queue, passive=True).method.message_count
        if count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def test_writes_after_a_pipelined_close_succeed_and_are_not_routed(
    broker_url: str, channel: BlockingChannel, name: str
) -> None:
    sock, conn = _publishing(broker_url, name)
    try:
        before = b"".join(_publish(conn, name) for _ in range(300))
        close = conn.send_method(0, M("connection.close")(reply_code=200, reply_text="bye"))
        after = _publish(conn, name) * 50
        # The close and the start of a frame in one read (then a pause): the broker must
        # take the rest of that frame as the rest of it, not as a new frame.
        sock.sendall(before + close + after[:70])
        time.sleep(0.05)
        sock.sendall(after[70:])
        sock.setblocking(False)
        received, written = b"", 0
        errors: list[OSError | EOFError] = []
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            try:
                written += sock.send(after)
            except BlockingIOError:
                pass
            except OSError as e:  # EPIPE or a reset: the broker closed on the client
                errors.append(e)
                break
            try:
                chunk = sock.recv(65536)
                if not chunk:
                    errors.append(EOFError("the broker closed the socket"))
                    break
                received += chunk
            except BlockingIOError:
                pass
            time.sleep(0.005)
    finally:
        sock.close()
    assert errors == []
    assert CLOSE_OK in received
    assert written > 100_000  # the client did go on writing for that second
    assert _count(channel, name, 300) == 300
    channel.queue_delete(name)


def test_a_frame_larger_than_frame_max_after_the_close_ends_the_wait(
    broker_url: str, channel: BlockingChannel, name: str
) -> None:
    sock, conn = _publishing(broker_url, name)
    try:
        sock.sendall(conn.send_method(0, M("connection.close")(reply_code=200, reply_text="")))
        sock.settimeout(10)
        received = b""
        while CLOSE_OK not in received:
            chunk = sock.recv(65536)
            assert chunk, "the broker closed the socket before close-ok"
            received += chunk
        began = time.monotonic()
        sock.sendall(struct.pack(">BHI", 1, 1, conn.frame_max * 2) + b"\0" * 1000)
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        closed_after = time.monotonic() - began
    finally:
        sock.close()
    assert closed_after < 10  # RabbitMQ: after its 3 s grace for an error; here at once
    channel.queue_delete(name)


def test_the_wait_lasts_rabbitmqs_closing_timeout_or_the_heartbeat_if_shorter() -> None:
    assert CLOSING_TIMEOUT == 30
    assert [closing_seconds(h) for h in (0, 5, 29, 30, 60)] == [30, 5, 29, 30, 30]
