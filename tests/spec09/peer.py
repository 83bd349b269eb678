"""A minimal synchronous AMQP peer on the sans-IO protocol layer, for the 0-9 rule tests.

The project's client covers the 0-9-1 subset; the 0-9 classes (access, file, stream, dtx,
tunnel, message) and the error cases need exact frames, so tests speak them with this.
Every wait is bounded.
"""

from __future__ import annotations

import socket
import time
from typing import Any
from urllib.parse import urlsplit

from amqp_protocol import SPEC_0_9, Connection, Spec, events

TIMEOUT = 5.0


def _connect(address: tuple[str, int], receive_buffer: int | None) -> socket.socket:
    if receive_buffer is None:
        return socket.create_connection(address, timeout=TIMEOUT)
    family, kind, proto, _, sockaddr = socket.getaddrinfo(*address, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    # Before connecting: the window scale is agreed in the handshake.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(TIMEOUT)
    sock.connect(sockaddr)
    return sock


class Peer:
    """A 0-9 client connection. ``handshake=False`` stops after the protocol header, for
    tests that drive the handshake step by step (``login``, ``tune``, ``open``).
    ``receive_buffer``: a fixed SO_RCVBUF, which turns the kernel's receive autotuning off
    (its limit, tcp_rmem, is 32 MiB on recent kernels), for tests that need what the server
    can send while the peer does not read bounded."""

    def __init__(
        self,
        url: str,
        spec: Spec = SPEC_0_9,
        user: str = "guest",
        password: str = "guest",
        *,
        virtual_host: str = "/",
        handshake: bool = True,
        header: bytes | None = None,
        receive_buffer: int | None = None,
    ):
        parts = urlsplit(url)
        self.spec = spec
        self.sock = _connect((parts.hostname or "", parts.port or 5672), receive_buffer)
        self.proto = Connection("client", spec)
        self.pending: list[Any] = []
        self.closed = False
        self.sock.sendall(header or self.proto.initiate())  # ``header``: another client's
        self.start = self.expect(0, "connection.start").method
        self.server_properties = self.start.server_properties
        if handshake:
            tune = self.login(user, password)
            self.tune(tune.channel_max, tune.frame_max)
            self.expect_reply(self.open(virtual_host), "connection.open-ok")

    def login(self, user: str, password: str, mechanism: str = "PLAIN", **fields: Any) -> Any:
        """connection.start-ok; returns the server's connection.tune."""
        fields = {
            "client_properties": {"product": "spec09-tests"},
            "mechanism": mechanism,
            "response": f"\0{user}\0{password}".encode(),
            "locale": "en_US",
            **fields,
        }
        self.send(0, "connection.start-ok", **fields)
        return self.expect(0, "connection.tune").method

    def tune(self, channel_max: int, frame_max: int) -> None:
        self.proto.frame_max = frame_max
        self.send(
            0, "connection.tune-ok", channel_max=channel_max, frame_max=frame_max, heartbeat=0
        )

    def open(self, virtual_host: str = "/", insist: bool = False) -> Any:
        """connection.open; returns the server's reply (open-ok or redirect)."""
        self.send(0, "connection.open", virtual_host=virtual_host, insist=insist)
        return self.expect(0, "connection.open-ok", "connection.redirect").method

    @staticmethod
    def expect_reply(method: Any, name: str) -> None:
        assert name == method.NAME, f"expected {name}, got {method}"

    def socket_closed_silently(self, timeout: float = TIMEOUT) -> bool:
        """True when the server closes the socket within ``timeout`` without sending any
        further octet."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionResetError:
            data = b""
        self.closed = not data
        return not data and not self.pending

    # -- sending ------------------------------------------------------------------------------

    def method(self, name: str, /, **fields: Any) -> Any:
        return self.spec.method(name)(**fields)

    def send(self, channel: int, name: str, /, **fields: Any) -> None:
        self.sock.sendall(self.proto.send_method(channel, self.method(name, **fields)))

    def send_content(
        self,
        channel: int,
        name: str,
        body: bytes,
        properties: dict[str, Any] | None = None,
        **fields: Any,
    ) -> None:
        props = self.spec.properties(name.split(".")[0])(**(properties or {}))
        self.sock.sendall(
            self.proto.send_content(channel, self.method(name, **fields), props, body)
        )

    def message_count(self, queue: str, channel: int = 1) -> int:
        """How many messages ``queue`` holds ready (a passive queue.declare on ``channel``)."""
        return int(self.call(channel, "queue.declare", queue=queue, passive=True).message_count)

    def call(self, channel: int, name: str, /, reply: str | None = None, **fields: Any) -> Any:
        """Send a method and return its reply method (the first of its ``<response>``s by
        default; for a method without one, the execution.complete of an execution.flush).
        Positional-only parameters: a method may have a field ``name`` (exchange.query)."""
        method = self.method(name, **fields)
        self.sock.sendall(self.proto.send_method(channel, method))
        names = (reply,) if reply else tuple(method.responses())
        if not names:
            # The 0-10 draft dropped this method's -ok (exchange.declare, queue.bind,
            # basic.qos, tx.select, ...): its execution.complete says the server carried
            # it out, and a failure shows as the close that comes instead.
            return self.call(channel, "execution.flush", "execution.complete")
        return self.expect(channel, *names).method

    def request(
        self, channel: int, name: str, request_id: int, /, body: bytes | None = None, **fields: Any
    ) -> None:
        """0-10 draft: ``name`` in a frame-request (with its content when ``body`` is given)."""
        method = self.method(name, **fields)
        data = self.proto.send_request(channel, method, request_id)
        if body is not None:
            properties = self.spec.properties(name.split(".")[0])()
            data += self.proto.content_frames(channel, method, properties, body)
        self.sock.sendall(data)

    def open_channel(self, channel: int = 1) -> int:
        self.call(channel, "channel.open")
        return channel

    # -- receiving ----------------------------------------------------------------------------

    def _read(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return False
        if not data:
            self.closed = True
            return False
        self.pending.extend(self.proto.receive_data(data))
        return True

    def expect(self, channel: int, *names: str, timeout: float = TIMEOUT) -> Any:
        """The first event on ``channel`` whose method is one of ``names`` (earlier events on
        that channel stay queued); AssertionError naming what came instead on timeout, and
        on channel.close / connection.close when those were not asked for."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.pending):
                method = getattr(ev, "method", None)
                if method is None or getattr(ev, "channel", None) != channel and ev.channel != 0:
                    continue
                if method.NAME in names and (ev.channel == channel or ev.channel == 0):
                    return self.pending.pop(i)
                if (
                    method.NAME in ("channel.close", "connection.close")
                    and method.NAME not in names
                ):
                    raise AssertionError(
                        f"expected {names}, got {method.NAME} "
                        f"{method.reply_code} {method.reply_text}"
                    )
            if self.closed or not self._read(deadline):
                seen = [getattr(e, "method", e) for e in self.pending]
                raise AssertionError(
                    f"no {names} on channel {channel} within {timeout}s; got {seen}"
                )

    def expect_response(self, channel: int, timeout: float = TIMEOUT) -> events.ResponseReceived:
        """0-10 draft: the first frame-response on ``channel``; AssertionError naming what
        came instead on timeout or on a connection.close."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.pending):
                if isinstance(ev, events.ResponseReceived) and ev.received.channel == channel:
                    return self.pending.pop(i)
                method = getattr(ev, "method", None)
                if method is not None and method.NAME == "connection.close":
                    raise AssertionError(f"expected a response, got {method}")
            if self.closed or not self._read(deadline):
                raise AssertionError(f"no response on channel {channel}; got {self.pending}")

    def nothing(self, channel: int, *names: str, wait: float = 0.3) -> None:
        """Assert that no ``names`` method arrives on ``channel`` within ``wait`` seconds."""
        try:
            ev = self.expect(channel, *names, timeout=wait)
        except AssertionError as err:
            if "within" in str(err):
                return
            raise
        raise AssertionError(f"unexpected {ev.method.NAME}")

    def channel_error(self, channel: int) -> int:
        """The reply code of the channel.close the server sends (answered with close-ok)."""
        close = self.expect(channel, "channel.close").method
        self.send(channel, "channel.close-ok")
        return int(close.reply_code)

    def connection_error(self) -> int:
        close = self.expect(0, "connection.close").method
        return int(close.reply_code)

    def error(self, channel: int) -> tuple[str, int]:
        """("channel" | "connection", reply code) of the error the server raised."""
        close = self.expect(channel, "channel.close", "connection.close").method
        kind = "connection" if close.NAME == "connection.close" else "channel"
        return kind, int(close.reply_code)

    def close(self) -> None:
        try:
            if not self.closed:
                self.send(
                    0, "connection.close", reply_code=200, reply_text="bye", class_id=0, method_id=0
                )
                self.expect(0, "connection.close-ok", timeout=2)
        except (AssertionError, OSError):
            pass
        self.sock.close()
