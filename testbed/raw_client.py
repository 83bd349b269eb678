"""A bare AMQP client over a blocking socket, driven by the protocol layer: for sending what
no real client would, and for a consumer that stops reading its socket."""

from __future__ import annotations

import socket
import time
from typing import Any

from amqp_protocol import SPEC_0_9_1, Connection, Method, errors, events

M = SPEC_0_9_1.method


def open_raw(
    port: int, user: str = "guest", password: str = "guest", timeout: float = 5.0
) -> tuple[socket.socket, Connection]:
    """A socket through connection.open-ok on vhost "/", heartbeats off."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = Connection(role="client", spec=SPEC_0_9_1)
    sock.sendall(conn.initiate())
    start_ok = M("connection.start-ok")(
        client_properties={"capabilities": {"authentication_failure_close": True}},
        mechanism="PLAIN",
        response=f"\0{user}\0{password}".encode(),
        locale="en_US",
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for ev in conn.receive_data(_recv(sock)):
            if not isinstance(ev, events.MethodReceived):
                continue
            name = ev.method.NAME
            if name == "connection.start":
                sock.sendall(conn.send_method(0, start_ok))
            elif name == "connection.tune":
                tune: Any = ev.method
                sock.sendall(
                    conn.send_method(
                        0,
                        M("connection.tune-ok")(
                            channel_max=tune.channel_max, frame_max=tune.frame_max, heartbeat=0
                        ),
                    )
                )
                conn.frame_max = tune.frame_max
                sock.sendall(conn.send_method(0, M("connection.open")(virtual_host="/")))
            elif name == "connection.open-ok":
                return sock, conn
            else:
                raise AssertionError(f"unexpected {name} in the handshake")
    raise TimeoutError("no connection.open-ok")


def _recv(sock: socket.socket) -> bytes:
    data = sock.recv(65536)
    if not data:
        raise ConnectionError("the server closed the socket")
    return data


def call(sock: socket.socket, conn: Connection, channel: int, method: Method) -> Any:
    """Send a synchronous method and return the next method received on its channel (a
    generated method class: ``Any`` lets callers read its fields)."""
    sock.sendall(conn.send_method(channel, method))
    return next_method(sock, conn, channel)


def next_method(sock: socket.socket, conn: Connection, channel: int) -> Any:
    """The next method received on ``channel`` or on channel 0."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for ev in conn.receive_data(_recv(sock)):
            if isinstance(ev, events.MethodReceived) and ev.channel in (0, channel):
                return ev.method
    raise TimeoutError(f"nothing received on channel {channel}")


def read_until_quiet(sock: socket.socket, conn: Connection, quiet: float, limit: float) -> str:
    """Read and decode what the server sends until it closes the socket ("closed"), sends
    connection.close ("close <code>"), stays silent for ``quiet`` seconds ("quiet") or
    ``limit`` seconds pass ("busy"). Undecodable replies count as "garbled"."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        sock.settimeout(quiet)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return "quiet"
        except ConnectionError:
            return "closed"
        if not data:
            return "closed"
        try:
            evs = conn.receive_data(data)
        except errors.AMQPError:
            return "garbled"
        for ev in evs:
            if isinstance(ev, events.MethodReceived) and ev.method.NAME == "connection.close":
                close: Any = ev.method
                return f"close {close.reply_code}"
    return "busy"
