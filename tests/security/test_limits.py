"""Limits from the config: each refuses with the spec's error (or drops a silent peer), and
the broker keeps serving everyone else."""

from __future__ import annotations

import socket
import struct
import time
from contextlib import ExitStack
from typing import Any

import pika
import pytest
from pika.exceptions import AMQPConnectionError, ChannelClosedByBroker, ProbableAccessDeniedError

from amqp_protocol import SPEC_0_9_1
from broker import Broker
from testbed.raw_client import M, call, next_method, open_raw


def _broker(**config: Any) -> Broker:
    return Broker(config={"auth_failure_delay": 0.05, **config})


def _connect(
    broker: Broker, user: str = "guest", password: str = "guest"
) -> pika.BlockingConnection:
    params = pika.ConnectionParameters(
        "127.0.0.1", broker.port, "/", pika.PlainCredentials(user, password), connection_attempts=1
    )
    return pika.BlockingConnection(params)


def _serves(broker: Broker) -> bool:
    conn = _connect(broker)
    conn.channel().queue_declare("", exclusive=True)
    conn.close()
    return True


def test_total_connection_limit_drops_the_connection_over_it() -> None:
    with _broker(connection_max=3) as b, ExitStack() as stack:
        held = [_connect(b) for _ in range(3)]
        for conn in held:
            stack.callback(conn.close)
        with pytest.raises(AMQPConnectionError):
            _connect(b)
        held.pop().close()
        stack.pop_all()
        assert _serves(b)
        for conn in held:
            conn.close()


def test_user_connection_limit_is_530_not_allowed() -> None:
    users = {"app": {"password": "pw", "max_connections": 2}, "guest": {"password": "guest"}}
    with _broker(users=users) as b:
        held = [_connect(b, "app", "pw") for _ in range(2)]
        with pytest.raises(ProbableAccessDeniedError) as e:
            _connect(b, "app", "pw")
        assert "(530)" in str(e.value) and "connection limit" in str(e.value)
        assert _serves(b)  # other users are not limited
        for conn in held:
            conn.close()


@pytest.mark.parametrize(
    ("setting", "declare"),
    [
        ("vhost_queue_max", lambda ch, name: ch.queue_declare(name)),
        ("vhost_exchange_max", lambda ch, name: ch.exchange_declare(name)),
    ],
)
def test_declarations_over_the_vhost_limit_are_406_and_redeclaring_stays_allowed(
    setting: str, declare: Any
) -> None:
    with _broker(**{setting: 2}) as b:
        conn = _connect(b)
        ch = conn.channel()
        declare(ch, "r0")
        declare(ch, "r1")
        declare(ch, "r0")
        with pytest.raises(ChannelClosedByBroker) as e:
            declare(ch, "r2")
        assert e.value.reply_code == 406 and "limit in vhost '/' (2)" in e.value.reply_text
        conn.close()


def test_message_over_the_maximum_size_is_406_on_the_channel() -> None:
    with _broker(max_message_size=1000) as b:
        conn = _connect(b)
        ch = conn.channel()
        q = ch.queue_declare("", exclusive=True).method.queue
        ch.basic_publish("", q, b"x" * 1000)
        assert ch.basic_get(q, auto_ack=True)[2] == b"x" * 1000
        ch.basic_publish("", q, b"x" * 1001)
        with pytest.raises(ChannelClosedByBroker) as e:
            ch.basic_get(q)
        assert e.value.reply_code == 406 and "larger than configured max size" in e.value.reply_text
        assert conn.channel().queue_declare(q, passive=True).method.message_count == 0
        conn.close()


def test_a_body_over_the_maximum_size_is_discarded_and_refused_once_all_in() -> None:
    """RabbitMQ 4 closes the channel (406) after the last frame of such a body, not at its
    header (measured on 4.0.5: a 20 MiB body, nothing before its end); the bundled broker
    keeps none of it meanwhile (tests/protocol/test_max_body_size.py)."""
    with _broker(max_message_size=1 << 20) as b:
        sock, conn = open_raw(b.port)
        with sock:
            call(sock, conn, 1, M("channel.open")())
            publish = conn.send_method(1, M("basic.publish")(exchange="", routing_key="q"))
            header = SPEC_0_9_1.properties("basic")().encode_header(2 << 20)
            frame = struct.pack(">BHI", 2, 1, len(header)) + header + b"\xce"
            body = struct.pack(">BHI", 3, 1, 1 << 16) + b"b" * (1 << 16) + b"\xce"
            sock.sendall(publish + frame + body * 31)
            # Read after the first 31 of 32 pieces: no close on channel 1 before the end
            # (next_method would drop one while it waits for channel 2's open-ok).
            assert call(sock, conn, 2, M("channel.open")()).NAME == "channel.open-ok"
            sock.sendall(body)
            close = next_method(sock, conn, 1)
            assert close.NAME == "channel.close" and close.reply_code == 406
            close_ok = conn.send_method(1, M("channel.close-ok")())
            sock.sendall(close_ok)
            assert call(sock, conn, 1, M("channel.open")()).NAME == "channel.open-ok"


def test_silent_peer_is_dropped_after_the_handshake_timeout() -> None:
    with _broker(handshake_timeout=0.5) as b:
        for prelude in (b"", SPEC_0_9_1.protocol_header):
            with socket.create_connection(("127.0.0.1", b.port), timeout=5) as s:
                s.sendall(prelude)
                began = time.monotonic()
                s.settimeout(5)
                while s.recv(4096):
                    pass  # connection.start, then the close
                assert time.monotonic() - began < 3
        assert _serves(b)


def test_channel_max_bounds_the_open_channels_not_their_numbers() -> None:
    """RabbitMQ 4 (measured on 4.0.5, channel_max 5): channel 100 opens, and so do four
    more; the sixth open channel is 530 NOT_ALLOWED."""
    with _broker(channel_max=5) as b:
        sock, conn = open_raw(b.port)
        with sock:
            for channel in (100, 1, 2, 3, 4):
                assert call(sock, conn, channel, M("channel.open")()).NAME == "channel.open-ok"
            reply = call(sock, conn, 5, M("channel.open")())
            assert reply.NAME == "connection.close" and reply.reply_code == 530
            assert "has reached the negotiated channel_max (5)" in reply.reply_text
