"""Opening, tuning, heartbeats and closing connections."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from amqp_protocol import SPEC_0_8, SPEC_0_9, SPEC_0_9_1, Method, Spec
from amqp_protocol import Connection as ProtocolConnection
from amqp_protocol.events import MethodReceived, ProtocolHeaderReceived
from amqp_spark.client import AMQPConnectionError, ConnectionClosed, connect
from testbed.ports import free_port

pytestmark = pytest.mark.timeout(60)


def with_url(
    url: str, *, userinfo: str | None = None, path: str | None = None, query: str = ""
) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc if userinfo is None else f"{userinfo}@{parts.netloc.split('@')[-1]}"
    return urlunsplit((parts.scheme, netloc, parts.path if path is None else path, query, ""))


def test_connect_negotiates_tuning(broker_url: str) -> None:
    with connect(with_url(broker_url, query="heartbeat=7&frame_max=65536&channel_max=64")) as c:
        assert c.is_open
        assert (c.heartbeat, c.frame_max, c.channel_max) == (7, 65536, 64)
        assert c.server_properties["capabilities"]["publisher_confirms"] is True
    assert not c.is_open


@pytest.mark.parametrize("spec", [SPEC_0_9_1, SPEC_0_9], ids=lambda s: s.label)
def test_every_spec_version_publishes_and_gets(broker_url: str, spec: Spec) -> None:
    _publish_and_get(broker_url, spec)


@pytest.mark.parametrize("broker_url", ["bundled"], indirect=True)
def test_0_8_publishes_and_gets(broker_url: str) -> None:
    """The bundled broker only: RabbitMQ 4 no longer speaks 0-8 (it answers 0-8's protocol
    header with AMQP 1.0's; 3.10 opened a 0-8 connection)."""
    _publish_and_get(broker_url, SPEC_0_8)


def _publish_and_get(broker_url: str, spec: Spec) -> None:
    with connect(broker_url, spec=spec) as c, c.channel() as ch:
        queue = ch.queue_declare("", exclusive=True).queue
        ch.basic_publish("", queue, b"hello", {"content_type": "text/plain"})
        d = ch.basic_get(queue, no_ack=True)
        assert d is not None and d.body == b"hello"
        assert d.properties.fields()["content_type"] == "text/plain"


def test_idle_connection_survives_short_heartbeats(broker_url: str) -> None:
    with connect(with_url(broker_url, query="heartbeat=1")) as c:
        assert c.heartbeat == 1
        time.sleep(4.5)  # the broker drops a client that misses two intervals
        assert c.is_open
        with c.channel() as ch:
            assert ch.queue_declare("", exclusive=True).queue


def test_wrong_password_is_refused_without_revealing_it(broker_url: str) -> None:
    with pytest.raises(AMQPConnectionError) as e:
        connect(with_url(broker_url, userinfo="guest:Wr0ng-Secret"))
    assert e.value.reply_code == 403
    assert "Wr0ng-Secret" not in str(e.value) and "Wr0ng-Secret" not in repr(e.value)


def test_unknown_vhost_is_refused(broker_url: str) -> None:
    with pytest.raises(AMQPConnectionError) as e:
        connect(with_url(broker_url, path="/no-such-vhost"))
    assert e.value.reply_code == 530


def test_refused_port_raises_connection_error() -> None:
    with pytest.raises(AMQPConnectionError, match="cannot connect") as e:
        connect(f"amqp://guest:s3cret@127.0.0.1:{free_port()}/")
    assert e.value.reply_code == 0
    assert "s3cret" not in str(e.value)


def test_amqps_to_a_plain_listener_fails_the_tls_handshake(broker_url: str) -> None:
    tls_url = "amqps" + with_url(broker_url, query="verify=verify_none&connection_timeout=3000")[4:]
    with pytest.raises(AMQPConnectionError, match="TLS"):
        connect(tls_url)


class SilentServer:
    """An AMQP server that completes the handshake, then never sends another byte (with
    ``hang_up_on_close``: it closes the socket on connection.close instead of answering;
    ``after_open``: a method it sends right after open-ok)."""

    def __init__(
        self, heartbeat: int, hang_up_on_close: bool = False, after_open: Method | None = None
    ) -> None:
        self.heartbeat = heartbeat
        self.hang_up_on_close = hang_up_on_close
        self.after_open = after_open
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.conn: socket.socket | None = None

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.conn = conn
        conn.settimeout(10)
        proto = ProtocolConnection(role="server", supported=[SPEC_0_9_1])
        m = SPEC_0_9_1.method
        replies = {
            "connection.start-ok": m("connection.tune")(
                channel_max=0, frame_max=131072, heartbeat=self.heartbeat
            ),
            "connection.open": m("connection.open-ok")(),
        }
        while True:
            try:
                data = conn.recv(4096)
            except OSError:  # closed by the fixture's teardown
                return
            if not data:
                return
            for event in proto.receive_data(data):
                if isinstance(event, ProtocolHeaderReceived):
                    start = m("connection.start")(
                        version_major=0, version_minor=9, mechanisms=b"PLAIN", locales=b"en_US"
                    )
                    conn.sendall(proto.send_method(0, start))
                elif isinstance(event, MethodReceived) and event.method.NAME in replies:
                    conn.sendall(proto.send_method(0, replies[event.method.NAME]))
                    if event.method.NAME == "connection.open" and self.after_open is not None:
                        conn.sendall(proto.send_method(0, self.after_open))
                elif (
                    self.hang_up_on_close
                    and isinstance(event, MethodReceived)
                    and event.method.NAME == "connection.close"
                ):
                    conn.close()
                    return

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):  # shutdown, not only close: wakes our recv
                self.conn.shutdown(socket.SHUT_RDWR)
            self.conn.close()
        self.listener.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer(heartbeat=1)
    yield server
    server.close()


def test_silent_server_is_detected_after_two_missed_heartbeats(
    silent_server: SilentServer,
) -> None:
    began = time.monotonic()
    with connect(f"amqp://guest:guest@127.0.0.1:{silent_server.port}/") as c:
        assert c.heartbeat == 1
        deadline = time.monotonic() + 10
        while c.is_open and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not c.is_open
        elapsed = time.monotonic() - began
        assert 2 <= elapsed < 4
        with pytest.raises(ConnectionClosed, match="missed heartbeats"):
            c.channel()


def test_dropped_socket_wakes_a_waiting_caller_with_connection_closed() -> None:
    server = SilentServer(heartbeat=0)
    try:
        with connect(f"amqp://guest:guest@127.0.0.1:{server.port}/") as c:
            threading.Timer(0.5, server.close).start()
            began = time.monotonic()
            with pytest.raises(ConnectionClosed, match="closed the socket"):
                c.channel()  # channel.open is never answered
            assert time.monotonic() - began < 5
            assert not c.is_open
    finally:
        server.close()


@pytest.mark.spec_rule("connection.close-ok:reporting")
def test_a_socket_closed_before_close_ok_is_logged_and_close_stops_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = SilentServer(heartbeat=0, hang_up_on_close=True)
    try:
        c = connect(f"amqp://guest:guest@127.0.0.1:{server.port}/")
        began = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="amqp_spark.client.connection"):
            c.close(timeout=60)
        # Not a speed check: close() waiting out its whole timeout is the failure.
        assert time.monotonic() - began < 60
        assert not c.is_open
        assert any("before connection.close-ok" in r.getMessage() for r in caplog.records)
    finally:
        server.close()


def test_a_server_that_never_answers_close_is_logged_after_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = SilentServer(heartbeat=0)
    try:
        c = connect(f"amqp://guest:guest@127.0.0.1:{server.port}/")
        with caplog.at_level(logging.WARNING, logger="amqp_spark.client.connection"):
            c.close(timeout=0.2)
        assert not c.is_open
        assert any("no connection.close-ok" in r.getMessage() for r in caplog.records)
    finally:
        server.close()


def test_a_connection_method_out_of_order_after_open_is_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tune = SPEC_0_9_1.method("connection.tune")(channel_max=1, frame_max=4096, heartbeat=0)
    server = SilentServer(heartbeat=0, after_open=tune)
    url = f"amqp://guest:guest@127.0.0.1:{server.port}/"

    def logged() -> bool:
        return any("ignoring unexpected connection.tune" in r.getMessage() for r in caplog.records)

    try:
        with (
            caplog.at_level(logging.WARNING, logger="amqp_spark.client.connection"),
            connect(url) as c,
        ):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not logged():
                time.sleep(0.05)
            assert logged()
            assert c.is_open
            assert (c.channel_max, c.frame_max) == (2047, 131072)  # ours, not re-tuned
    finally:
        server.close()
