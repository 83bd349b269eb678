"""Connection-level behaviour: negotiation, authentication, virtual hosts, malformed input
over a raw socket, heartbeats, and starting the broker in-process and as a program."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pika
import pytest
from pika.exceptions import ProbableAuthenticationError

from amqp_protocol import SPEC_0_9_1, Connection, events
from amqp_protocol.generated.any_version import ConnectionClose, ConnectionTune
from broker import Broker
from testbed.ports import free_port
from testbed.waiting import holds_within

REPO = Path(__file__).resolve().parents[2]


def _addr(broker_url: str) -> tuple[str, int]:
    p = pika.URLParameters(broker_url)
    return p.host, p.port


def _open_raw(broker_url: str) -> tuple[socket.socket, Connection]:
    """A raw socket through connection.open-ok, driven by the protocol layer."""
    sock = socket.create_connection(_addr(broker_url), timeout=5)
    conn = Connection(role="client", spec=SPEC_0_9_1)
    sock.sendall(conn.initiate())
    M = SPEC_0_9_1.method
    replies = {
        "connection.start": lambda m: M("connection.start-ok")(
            client_properties={"capabilities": {"authentication_failure_close": True}},
            mechanism="PLAIN",
            response=b"\0guest\0guest",
            locale="en_US",
        ),
        "connection.tune": lambda m: M("connection.tune-ok")(
            channel_max=m.channel_max, frame_max=m.frame_max, heartbeat=0
        ),
    }
    while True:
        for ev in _recv_events(sock, conn):
            assert isinstance(ev, events.MethodReceived), ev
            name = ev.method.NAME
            if name == "connection.open-ok":
                return sock, conn
            sock.sendall(conn.send_method(0, replies[name](ev.method)))
            if name == "connection.tune":
                assert isinstance(ev.method, ConnectionTune)
                conn.frame_max = ev.method.frame_max
                sock.sendall(conn.send_method(0, M("connection.open")(virtual_host="/")))


def _recv_events(sock: socket.socket, conn: Connection) -> list[events.Event]:
    data = sock.recv(65536)
    assert data, "server closed the socket"
    return conn.receive_data(data)


def _expect_close(sock: socket.socket, conn: Connection) -> ConnectionClose:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for ev in _recv_events(sock, conn):
            if isinstance(ev, events.MethodReceived) and isinstance(ev.method, ConnectionClose):
                return ev.method
    raise AssertionError("no connection.close")


def _still_serves(broker_url: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    conn.channel().queue_declare("", exclusive=True)
    conn.close()


#: The header each broker answers one it does not speak with: a protocol it speaks. RabbitMQ
#: 4 offers AMQP 1.0 (its SASL layer), which the bundled broker does not speak (RabbitMQ 3.10
#: offered 0-9-1, as the bundled broker does: docs/rabbitmq-4-differences.md).
OFFERED = {"bundled": b"AMQP\x00\x00\x09\x01", "rabbitmq": b"AMQP\x03\x01\x00\x00"}


def test_unsupported_protocol_header_gets_one_the_broker_speaks_back(
    broker_url: str, request: pytest.FixtureRequest
) -> None:
    with socket.create_connection(_addr(broker_url), timeout=5) as s:
        s.sendall(b"AMQP\x01\x01\x00\x0b")  # 0-11: no broker speaks it (0-10 is spoken)
        assert s.recv(8) == OFFERED[request.node.callspec.params["broker_url"]]
        # Then the server closes the socket (RabbitMQ abortively: a reset).
        with contextlib.suppress(ConnectionResetError):
            assert s.recv(1) == b""


def test_unknown_frame_type_closes_only_that_connection_with_501(broker_url: str) -> None:
    sock, conn = _open_raw(broker_url)
    with sock:
        sock.sendall(struct.pack(">BHI", 9, 0, 1) + b"x\xce")
        close = _expect_close(sock, conn)
        assert close.reply_code == 501
    _still_serves(broker_url)


def test_bad_frame_end_is_501(broker_url: str) -> None:
    sock, conn = _open_raw(broker_url)
    with sock:
        sock.sendall(struct.pack(">BHI", 8, 0, 0) + b"\x00")
        assert _expect_close(sock, conn).reply_code == 501
    _still_serves(broker_url)


def test_frame_larger_than_negotiated_is_501(broker_url: str) -> None:
    sock, conn = _open_raw(broker_url)
    with sock:
        sock.sendall(
            struct.pack(">BHI", 3, 1, conn.frame_max + 100)
            + b"\x00" * (conn.frame_max + 100)
            + b"\xce"
        )
        assert _expect_close(sock, conn).reply_code == 501


def test_method_on_unopened_channel_is_504_naming_the_method(broker_url: str) -> None:
    sock, conn = _open_raw(broker_url)
    with sock:
        declare = SPEC_0_9_1.method("queue.declare")(queue="x")
        sock.sendall(
            declare.encode().join([struct.pack(">BHI", 1, 5, len(declare.encode())), b"\xce"])
        )
        close = _expect_close(sock, conn)
        assert close.reply_code == 504
        assert (close.class_id, close.method_id) == (50, 10)


_AFTER_OPEN: dict[str, dict[str, Any]] = {
    "connection.start-ok": {"mechanism": "PLAIN", "response": b"\0guest\0guest"},
    "connection.tune-ok": {"channel_max": 10, "frame_max": 131072},
    "connection.open": {"virtual_host": "/"},
    "connection.close-ok": {},
    "connection.blocked": {"reason": "low on memory"},
}


@pytest.mark.parametrize("name", _AFTER_OPEN)
def test_a_connection_method_out_of_order_after_open_ok_is_504_as_rabbitmq_answers(
    broker_url: str, name: str
) -> None:
    """RabbitMQ 4's words for any connection method out of order once open (measured on
    4.0.5); the handshake's state machine (amqp_protocol.handshake) answers the same."""
    sock, conn = _open_raw(broker_url)
    method = SPEC_0_9_1.method(name)(**_AFTER_OPEN[name])
    payload = method.encode()  # framed by hand: a close-ok would end our own protocol state
    with sock:
        sock.sendall(struct.pack(">BHI", 1, 0, len(payload)) + payload + b"\xce")
        close: Any = _expect_close(sock, conn)
        assert (close.reply_code, close.reply_text) == (
            504,
            "CHANNEL_ERROR - unexpected method in connection state running",
        )
        assert (close.class_id, close.method_id) == (method.CLASS_ID, method.METHOD_ID)


def test_truncated_method_arguments_are_501_as_rabbitmq_reports_them(broker_url: str) -> None:
    sock, conn = _open_raw(broker_url)
    with sock:
        sock.sendall(conn.send_method(1, SPEC_0_9_1.method("channel.open")()))
        payload = struct.pack(">HH", 50, 10) + b"\x00"  # queue.declare cut short
        sock.sendall(struct.pack(">BHI", 1, 1, len(payload)) + payload + b"\xce")
        close = _expect_close(sock, conn)
        assert (close.reply_code, close.class_id, close.method_id) == (501, 50, 10)
    _still_serves(broker_url)


def test_wrong_password_is_refused_with_403(broker_url: str) -> None:
    url = broker_url.replace("guest:guest", "guest:wrong")
    with pytest.raises(ProbableAuthenticationError) as e:
        pika.BlockingConnection(pika.URLParameters(url))
    assert "ACCESS_REFUSED" in str(e.value)


def test_unknown_vhost_is_refused(broker_url: str) -> None:
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        pika.BlockingConnection(pika.URLParameters(broker_url.replace("%2F", "no-such-vhost")))


def test_server_properties_announce_capabilities(broker_url: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        caps = conn._impl.server_capabilities
        for cap in (
            "publisher_confirms",
            "exchange_exchange_bindings",
            "basic.nack",
            "consumer_cancel_notify",
            "connection.blocked",
            "per_consumer_qos",
            "authentication_failure_close",
        ):
            assert caps[cap] is True
    finally:
        conn.close()


def test_silent_peer_is_dropped_after_two_heartbeat_intervals() -> None:
    with Broker(config={"heartbeat": 1}) as b:
        sock, conn = _open_raw_with_heartbeat(b.url, 1)
        with sock:
            sock.settimeout(5)
            began = time.monotonic()
            received_heartbeat = False
            while True:
                data = sock.recv(4096)
                if not data:
                    break
                received_heartbeat |= any(
                    isinstance(e, events.HeartbeatReceived) for e in conn.receive_data(data)
                )
            assert received_heartbeat
            assert 1.5 < time.monotonic() - began < 4.5


def _open_raw_with_heartbeat(url: str, heartbeat: int) -> tuple[socket.socket, Connection]:
    sock = socket.create_connection(_addr(url), timeout=5)
    conn = Connection(role="client", spec=SPEC_0_9_1)
    sock.sendall(conn.initiate())
    M = SPEC_0_9_1.method
    while True:
        for ev in _recv_events(sock, conn):
            name = ev.method.NAME  # type: ignore[union-attr]
            if name == "connection.start":
                sock.sendall(
                    conn.send_method(
                        0,
                        M("connection.start-ok")(
                            client_properties={},
                            mechanism="PLAIN",
                            response=b"\0guest\0guest",
                            locale="en_US",
                        ),
                    )
                )
            elif name == "connection.tune":
                sock.sendall(
                    conn.send_method(
                        0,
                        M("connection.tune-ok")(
                            channel_max=2047, frame_max=131072, heartbeat=heartbeat
                        ),
                    )
                )
                sock.sendall(conn.send_method(0, M("connection.open")(virtual_host="/")))
            elif name == "connection.open-ok":
                return sock, conn


def test_in_process_broker_starts_quickly_and_serves() -> None:
    began = time.monotonic()
    with Broker() as b:
        assert time.monotonic() - began < 1.0
        assert b.url == f"amqp://guest:guest@127.0.0.1:{b.port}/%2F"
        _still_serves(b.url)


def test_configured_user_and_vhost(tmp_path: Path) -> None:
    cfg = tmp_path / "broker.toml"
    cfg.write_text('vhosts = ["/", "app"]\n[users.alice]\npassword = "s3cret"\nvhosts = ["app"]\n')
    with Broker(config=str(cfg)) as b:
        url = f"amqp://alice:s3cret@127.0.0.1:{b.port}/app"
        _still_serves(url)
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            pika.BlockingConnection(pika.URLParameters(b.url))  # guest is not configured


def test_cli_serves_and_exits_0_on_sigterm_closing_clients_with_320() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker", "--port", str(port), "--management-port", "0"]
        + ["--in-memory", "--stream-port", "0"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"amqp://guest:guest@127.0.0.1:{port}/%2F"
        assert holds_within(lambda: _connects(url), timeout=10)
        client = pika.BlockingConnection(pika.URLParameters(url))
        proc.send_signal(signal.SIGTERM)
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as e:
            client.process_data_events(5)
            client.channel()
        assert e.value.reply_code == 320
        assert proc.wait(10) == 0
        assert f"listening for AMQP on 127.0.0.1:{port}" in proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)


def _connects(url: str) -> bool:
    try:
        pika.BlockingConnection(pika.URLParameters(url)).close()
    except pika.exceptions.AMQPConnectionError:
        return False
    return True


@pytest.mark.spec_rule("channel.close:stability")
def test_methods_behind_a_failing_one_are_discarded_after_channel_close(broker_url: str) -> None:
    """An ack of an unknown tag fails the channel (406); the queue.declare sent in the same
    write must not be answered: after channel.close only close-ok counts."""
    sock, conn = _open_raw(broker_url)
    M = SPEC_0_9_1.method
    sock.sendall(conn.send_method(1, M("channel.open")()))
    assert [e.method.NAME for e in _recv_events(sock, conn)] == ["channel.open-ok"]  # type: ignore[union-attr]
    sock.sendall(
        conn.send_method(1, M("basic.ack")(delivery_tag=12345))
        + conn.send_method(1, M("queue.declare")(queue="", exclusive=True))
    )
    names: list[str] = []
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and "channel.close" not in names:
        names += [e.method.NAME for e in _recv_events(sock, conn)]  # type: ignore[union-attr]
    sock.sendall(conn.send_method(1, M("channel.close-ok")()))
    sock.settimeout(0.5)  # anything still coming would be the declare-ok
    with contextlib.suppress(TimeoutError, socket.timeout):
        names += [e.method.NAME for e in _recv_events(sock, conn)]  # type: ignore[union-attr]
    sock.close()
    assert names == ["channel.close"]
