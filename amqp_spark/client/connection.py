"""A blocking AMQP connection: the socket, the handshake and the background I/O thread.

Threads: callers encode their frames and write them with one ``sendall`` under the send lock
(so frames of different callers never interleave); one daemon I/O thread per connection reads
the socket, feeds the sans-IO ``protocol.Connection``, hands each method to its channel, and
writes only heartbeats and the replies the protocol demands (close-ok, flow-ok) under the same
lock. Lock order, to stay deadlock-free: send lock, then a channel's condition; the I/O
thread never sends while it holds a channel's condition.

A connection offers its channels ``abc.ChannelHost`` and uses only their ``abc.ChannelPeer``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import platform
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cache
from importlib import metadata
from typing import Any

from amqp_protocol import SPEC_0_9_1, Method, Spec, errors
from amqp_protocol import Connection as ProtocolConnection
from amqp_protocol.events import (
    ContentReceived,
    DeliveriesReceived,
    Event,
    MethodReceived,
    UnsupportedProtocol,
)
from amqp_protocol.handshake import Handshake, State

from . import sasl
from .abc import ChannelPeer, EncodedContent
from .addresses import rotation_for
from .channel import Channel
from .exceptions import AMQPConnectionError, ClientError, ConnectionClosed, NoNodeAnswered
from .parameters import ConnectionParameters, parse_url_hosts

log = logging.getLogger(__name__)

#: How long close() waits for the server's close-ok before dropping the socket.
CLOSE_TIMEOUT = 5.0
#: A sendall that makes no progress for this long means the peer is gone.
SEND_TIMEOUT = 60.0
#: How often the I/O thread wakes up when there is no heartbeat to keep.
IDLE_TICK = 1.0
_RECV_SIZE = 262144
#: connection.redirect hops followed before giving up (a loop of redirects is a server bug).
MAX_REDIRECTS = 3


@cache
def _version() -> str:
    """This package's version, for the client-properties table."""
    try:
        return metadata.version("amqp-spark")
    except metadata.PackageNotFoundError:
        return "unknown"


def connect(
    url: str,
    *,
    ssl_context: ssl.SSLContext | None = None,
    client_properties: dict[str, Any] | None = None,
    spec: Spec = SPEC_0_9_1,
) -> Connection:
    """Open a connection to the broker at ``url`` (see ``parameters.parse_url``).

    A URL naming several hosts (see ``addresses``) gets a connection to the first of them
    that answers, in the order this process's rotation of them gives; a connection lost
    later moves the rotation on to the next host. ``NoNodeAnswered`` when none answers."""
    targets = parse_url_hosts(url, ssl_context=ssl_context)
    if len(targets) == 1:
        return Connection(targets[0], client_properties=client_properties, spec=spec)
    by_address = {params.address: params for params in targets}
    rotation = rotation_for(by_address)
    failures: list[tuple[str, BaseException]] = []
    for address in rotation.order():
        try:
            conn = Connection(by_address[address], client_properties=client_properties, spec=spec)
        except AMQPConnectionError as e:
            failures.append((str(address), e))
            continue
        rotation.answered(address)
        conn.on_lost = functools.partial(rotation.lost, address)
        return conn
    raise NoNodeAnswered(failures)


class Connection:
    """One AMQP connection; open on construction, use ``connect()`` to build one from a URL."""

    def __init__(
        self,
        params: ConnectionParameters,
        *,
        client_properties: dict[str, Any] | None = None,
        spec: Spec = SPEC_0_9_1,
    ) -> None:
        self.params = params
        self.spec = spec
        self.server_properties: dict[str, Any] = {}
        self.frame_max = params.frame_max
        self.channel_max = params.channel_max
        self.heartbeat = 0
        self.blocked = False  #: the server sent connection.blocked (a resource alarm)
        self.blocked_reason = ""
        #: How long a publisher waits for the server to unblock the connection.
        self.blocked_timeout = 60.0
        self._proto = ProtocolConnection(role="client", spec=spec)
        #: the connection class's state machine; its changes are made under ``_state``
        self._handshake = Handshake("client", spec)
        self._send_lock = threading.Lock()
        #: The thread inside ``send`` (under ``_send_lock``), or None.
        self._sender: int | None = None
        # TLS objects must not be read and written at once from two threads.
        self._tls_lock: threading.Lock | None = None
        self._state = threading.Condition()  # blocked, channels, _error
        self._channels: dict[int, ChannelPeer] = {}
        self._error: ConnectionClosed | None = None
        self._close_ok = threading.Event()
        #: Called (on whichever thread finds out) when the connection ends other than by
        #: our close(): the network failed or the server closed it.
        self.on_lost: Callable[[], None] | None = None
        self._last_sent = self._last_received = time.monotonic()
        for _ in range(MAX_REDIRECTS + 1):
            self._sock = self._open_socket()
            try:
                redirect = self._open_connection(client_properties)
            except OSError as e:
                self._sock.close()
                raise AMQPConnectionError(0, f"connection lost during the handshake: {e}") from e
            except BaseException:
                self._sock.close()
                raise
            if redirect is None:
                break
            self._sock.close()
            self._follow(redirect)
        else:
            raise AMQPConnectionError(0, f"redirected more than {MAX_REDIRECTS} times")
        self._sock.settimeout(SEND_TIMEOUT)
        self._thread = threading.Thread(
            target=self._io_loop, name=f"amqp-io {params.host}:{params.port}", daemon=True
        )
        self._thread.start()

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<amqp_spark.client.Connection {self.params.redacted_url()} {state}>"

    @property
    def is_open(self) -> bool:
        return self._error is None

    # -- opening ------------------------------------------------------------------------------

    def _open_socket(self) -> socket.socket:
        p = self.params
        try:
            sock = socket.create_connection((p.host, p.port), timeout=p.connection_timeout)
        except OSError as e:
            raise AMQPConnectionError(
                0, f"cannot connect to {p.redacted_url()}: {e.strerror or e}"
            ) from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if p.ssl_context is None:
            return sock
        try:
            tls = p.ssl_context.wrap_socket(sock, server_hostname=p.server_hostname)
        except (ssl.SSLError, OSError) as e:
            sock.close()
            raise AMQPConnectionError(
                0, f"TLS handshake with {p.redacted_url()} failed: {e}"
            ) from e
        self._tls_lock = threading.Lock()
        return tls

    def _open_connection(self, client_properties: dict[str, Any] | None) -> Any:
        """connection.start ... open-ok, synchronously, before the I/O thread starts; returns
        the server's connection.redirect instead when it sends one (0-9, 0-8), else None."""
        p = self.params
        deadline = time.monotonic() + p.connection_timeout
        pending: deque[Event] = deque()
        self._sock.sendall(self._proto.initiate())
        start = self._handshake_method("connection.start", pending, deadline)
        self.server_properties = start.server_properties
        mechanism = sasl.choose_mechanism(start.mechanisms, p.mechanisms)
        if mechanism is None:
            raise AMQPConnectionError(
                0,
                f"no common SASL mechanism: server offers {start.mechanisms!r}, "
                f"we speak {' '.join(p.mechanisms)}",
            )
        start_ok = self._handshake.start_ok(
            self._client_properties(client_properties),
            mechanism,
            sasl.response(mechanism, p.username, p.password),
            "en_US",
        )
        self._sock.sendall(self._proto.send_method(0, start_ok))
        self._handshake_method("connection.tune", pending, deadline)
        tune_ok = self._handshake.tune_ok(p.channel_max, p.frame_max, p.heartbeat)
        tuning = self._handshake.tuning
        assert tuning is not None
        self.channel_max, self.frame_max, self.heartbeat = (
            tuning.channel_max,
            tuning.frame_max,
            tuning.heartbeat,
        )
        self._proto.channel_max = self.channel_max
        # frame-max 0 ("no limit") still needs a bound for splitting bodies into frames.
        self._proto.frame_max = self.frame_max or 2**31
        open_ = self._handshake.open(p.virtual_host)
        self._sock.sendall(self._proto.send_method(0, tune_ok) + self._proto.send_method(0, open_))
        opened = self._handshake_method("connection.open-ok", pending, deadline)
        if opened.NAME == "connection.redirect":
            return opened
        self._last_sent = self._last_received = time.monotonic()
        return None

    def _follow(self, redirect: Any) -> None:
        """connection.redirect (0-9, 0-8): connect again to the host it names or, if it names
        none, to the first of its known hosts (``host[:port]``, the port defaulting to ours)."""
        hosts = [redirect.host] if redirect.host else redirect.known_hosts.split()
        if not hosts:
            raise AMQPConnectionError(0, "connection.redirect named no host")
        host, _, port = hosts[0].rpartition(":") if ":" in hosts[0] else (hosts[0], "", "")
        self.params = replace(self.params, host=host, port=int(port) if port else self.params.port)
        self._proto = ProtocolConnection(role="client", spec=self.spec)
        self._handshake = Handshake("client", self.spec)

    def _handshake_method(self, name: str, pending: deque[Event], deadline: float) -> Any:
        """Read until the method ``name`` arrives (or connection.redirect instead of open-ok);
        a connection.close is a refusal."""
        while True:
            while pending:
                event = pending.popleft()
                if isinstance(event, UnsupportedProtocol):
                    raise AMQPConnectionError(
                        0,
                        f"the server does not speak AMQP {self.spec.label}; it offered "
                        f"protocol header {event.header!r}",
                    )
                if not isinstance(event, MethodReceived) or event.channel != 0:
                    continue
                method: Any = event.method
                try:
                    self._handshake.receive(method)
                except errors.AMQPError:
                    method = None  # out of order
                if method is not None and method.NAME == "connection.close":
                    with contextlib.suppress(OSError):
                        close_ok = self._handshake.close_ok()
                        self._sock.sendall(self._proto.send_method(0, close_ok))
                    raise AMQPConnectionError(
                        method.reply_code, method.reply_text, method.class_id, method.method_id
                    )
                # A challenge is in order, but this client's mechanisms take none.
                if method is None or method.NAME == "connection.secure":
                    raise AMQPConnectionError(
                        0, f"expected {name} from the server, got {event.method}"
                    )
                return method
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AMQPConnectionError(
                    0, f"timed out waiting for {name} from {self.params.redacted_url()}"
                )
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(_RECV_SIZE)
            except TimeoutError:
                continue
            except OSError as e:
                raise AMQPConnectionError(
                    0, f"connection lost while waiting for {name}: {e}"
                ) from e
            if not data:
                raise AMQPConnectionError(
                    0,
                    f"the server closed the connection while we waited for {name} "
                    "(wrong credentials, vhost or protocol?)",
                )
            try:
                pending.extend(self._proto.receive_data(data))
            except errors.AMQPError as e:
                raise AMQPConnectionError(e.reply_code, f"protocol error in handshake: {e}") from e

    def _client_properties(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        capabilities = {
            "publisher_confirms": True,
            "consumer_cancel_notify": True,
            "exchange_exchange_bindings": True,
            "basic.nack": True,
            "per_consumer_qos": True,
            "authentication_failure_close": True,
        }
        if self.spec.has_method("connection.blocked"):
            capabilities["connection.blocked"] = True
        return {
            "product": "amqp-spark",
            "version": _version(),
            "platform": f"Python {platform.python_version()}",
            "information": "amqp_spark.client, the AMQP client of the amqp Spark data source",
            "capabilities": capabilities,
            **(extra or {}),
        }

    # -- channels -----------------------------------------------------------------------------

    def channel(self) -> Channel:
        """Open a channel on the lowest free channel number."""
        with self._state:
            self._check_open()
            number = next(
                (n for n in range(1, self.channel_max + 1) if n not in self._channels), None
            )
            if number is None:
                raise ClientError(f"all {self.channel_max} channels are in use")
            ch = Channel(self, number)
            self._channels[number] = ch
        try:
            ch.open()
        except BaseException:
            self.release_channel(number)
            raise
        return ch

    def release_channel(self, number: int) -> None:
        """The channel ``number`` is closed: its number is free again."""
        with self._state:
            self._channels.pop(number, None)

    def deliver_as_columns(self, number: int) -> None:
        self._proto.deliver_as_columns(number)

    # -- sending (any thread) -----------------------------------------------------------------

    def send(self, data: bytes, prepare: Callable[[], None] | None = None) -> None:
        """Write ``data`` whole. ``prepare`` runs under the send lock just before the write:
        bookkeeping that must follow the wire order (expected replies, sequence numbers).

        A send from the thread already inside ``send`` (a signal handler that interrupted
        it: the source closes its connection at SIGTERM) raises ``ClientError`` instead of
        waiting forever for the lock that thread holds; its frame would cut the one in
        progress anyway.
        """
        if self._sender == threading.get_ident():
            raise ClientError(
                "a send on this connection was interrupted (by a signal handler) and the "
                "handler sent on it too: not sent"
            )
        with self._send_lock:
            self._sender = threading.get_ident()
            try:
                self._send_locked(data, prepare)
            finally:
                self._sender = None

    def _send_locked(self, data: bytes, prepare: Callable[[], None] | None) -> None:
        self._check_open()
        if prepare is not None:
            prepare()
        try:
            if self._tls_lock is None:
                self._sock.sendall(data)
            else:
                with self._tls_lock:
                    self._sock.sendall(data)
        except OSError as e:
            # A partial write leaves a half frame on the wire: the connection is unusable.
            self._fail(ConnectionClosed(0, f"connection lost while sending: {e}"))
            raise self._error from e  # type: ignore[misc]
        self._last_sent = time.monotonic()

    def send_method(self, channel: int, method: Method) -> None:
        self.send(self._proto.send_method(channel, method))

    def encode_method(self, channel: int, method: Method) -> bytes:
        return self._proto.send_method(channel, method)

    def encode_contents(
        self, channel: int, class_id: int, contents: Iterable[EncodedContent]
    ) -> bytes:
        return self._proto.send_encoded_contents(channel, class_id, contents)

    def _check_open(self) -> None:
        if self._error is not None:
            raise self._error

    # -- the I/O thread -----------------------------------------------------------------------

    def _io_loop(self) -> None:
        sock = self._sock
        try:
            while self._error is None:
                readable = self._wait_readable(sock, self._next_wakeup())
                if readable and not self._read(sock):
                    return
                self._keep_heartbeat()
        except (OSError, ValueError) as e:  # ValueError: select() on a socket we closed
            self._fail(ConnectionClosed(0, f"connection lost: {e}"))
        except Exception as e:  # a bug here must not leave callers waiting forever
            log.exception("AMQP I/O thread of %s failed", self.params.redacted_url())
            self._fail(ConnectionClosed(0, f"client I/O thread failed: {e!r}"))

    def _next_wakeup(self) -> float:
        if not self.heartbeat:
            return IDLE_TICK
        now = time.monotonic()
        half = self.heartbeat / 2
        return max(0.01, min(self._last_sent + half - now, self._last_received + half - now, half))

    def _wait_readable(self, sock: socket.socket, timeout: float) -> bool:
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        readable, _, _ = select.select([sock], [], [], timeout)
        return bool(readable)

    def _read(self, sock: socket.socket) -> bool:
        """Read what arrived and dispatch it; False when the connection has ended."""
        if self._tls_lock is None:
            data = sock.recv(_RECV_SIZE)
        else:
            with self._tls_lock:
                try:
                    data = sock.recv(_RECV_SIZE)
                except ssl.SSLWantReadError:  # a partial TLS record: wait for the rest
                    return True
        if not data:
            if self._proto.closing:
                if not self._close_ok.is_set():
                    # Rule connection.close-ok:reporting: a peer that sees the socket close
                    # without the close-ok handshake logs it.
                    log.warning(
                        "%s closed the socket before connection.close-ok",
                        self.params.redacted_url(),
                    )
                self._close_ok.set()  # nothing more can come: close() need not wait
                self._fail(ConnectionClosed(200, "closed by the client"), lost=False)
            else:
                self._fail(ConnectionClosed(0, "connection lost: the server closed the socket"))
            return False
        self._last_received = time.monotonic()
        try:
            events = self._proto.receive_data(data)
        except errors.AMQPError as err:
            self._dispatch(getattr(err, "events", []))
            self._protocol_error(err)
            return False
        self._dispatch(events)
        return self._error is None

    def _keep_heartbeat(self) -> None:
        if not self.heartbeat or self._error is not None:
            return
        now = time.monotonic()
        silent = now - self._last_received
        if silent > 2 * self.heartbeat:
            self._fail(
                ConnectionClosed(
                    0,
                    f"missed heartbeats: the server sent nothing for {silent:.1f}s "
                    f"(heartbeat {self.heartbeat}s)",
                )
            )
        elif now - self._last_sent >= self.heartbeat / 2 and not self._send_lock.locked():
            # A caller holding the send lock is writing, which the server counts as a sign of
            # life; waiting for it could stall this thread's reading behind a slow write.
            with contextlib.suppress(ClientError):
                self.send(self._proto.send_heartbeat())

    def _dispatch(self, events: list[Event]) -> None:
        """Hand methods to their channels, a run of consecutive ones per channel at a time
        (a consumer's deliveries arrive in long runs: one lock round each, not one each)."""
        run: list[MethodReceived | ContentReceived | DeliveriesReceived] = []
        for event in events:
            if (
                event.__class__ is not ContentReceived
                and event.__class__ is not MethodReceived
                and event.__class__ is not DeliveriesReceived
            ):
                continue  # heartbeats: receiving them was the point
            if run and event.channel != run[0].channel:
                self._to_channel(run)
                run = []
            if event.channel == 0 and not isinstance(event, DeliveriesReceived):
                self._on_connection_method(event.method)
            else:
                run.append(event)
        if run:
            self._to_channel(run)

    def _to_channel(self, run: list[MethodReceived | ContentReceived | DeliveriesReceived]) -> None:
        ch = self._channels.get(run[0].channel)
        if ch is not None:
            ch.handle_events(run)

    def _on_connection_method(self, method: Any) -> None:
        name = method.NAME
        try:
            with self._state:
                self._handshake.receive(method)
                close_ok = self._handshake.close_ok() if name == "connection.close" else None
        except errors.AMQPError:
            log.warning("ignoring unexpected %s from %s", name, self.params.redacted_url())
            return
        if close_ok is not None:
            with contextlib.suppress(ClientError):
                self.send_method(0, close_ok)
            self._fail(
                ConnectionClosed(
                    method.reply_code, method.reply_text, method.class_id, method.method_id
                )
            )
        elif name == "connection.close-ok":
            self._close_ok.set()
        elif name in ("connection.blocked", "connection.unblocked"):
            with self._state:
                self.blocked = name == "connection.blocked"
                self.blocked_reason = getattr(method, "reason", "") if self.blocked else ""
                channels = list(self._channels.values())
            for ch in channels:
                ch.wake_publishers()
        else:
            log.warning("ignoring unexpected %s from %s", name, self.params.redacted_url())

    def _protocol_error(self, err: errors.AMQPError) -> None:
        """The server broke the protocol: tell it why (connection.close) and drop it."""
        close = self._close_method(
            err.reply_code, err.reply_text[:255], err.class_id, err.method_id
        )
        if close is not None:
            with contextlib.suppress(ClientError):
                self.send_method(0, close)
        self._fail(ConnectionClosed(err.reply_code, f"protocol error: {err.reply_text}"))

    # -- closing ------------------------------------------------------------------------------

    def _close_method(
        self, reply_code: int, reply_text: str, class_id: int = 0, method_id: int = 0
    ) -> Method | None:
        """connection.close while the connection is open; None once it is closing."""
        with self._state:
            if self._error is not None or self._handshake.state is not State.OPEN:
                return None
            return self._handshake.close(reply_code, reply_text, class_id, method_id)

    def _fail(self, error: ConnectionClosed, lost: bool = True) -> None:
        """Record why the connection ended, wake every waiter, drop the socket; ``lost``
        unless our close() ended it. Idempotent. A lost connection is reported (``on_lost``:
        the address rotation moves on) before ``is_open`` turns False, so that a connection
        made by whoever sees it closed goes to the next address."""
        with self._state:
            if self._error is not None:
                return
            if lost and self.on_lost is not None:
                self.on_lost()
            self._error = error
            channels = list(self._channels.values())
            self._state.notify_all()
        for ch in channels:
            ch.mark_closed(error)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Close cleanly: connection.close, then wait (at most ``timeout``) for close-ok."""
        close = self._close_method(200, "Goodbye")
        if close is not None:
            try:
                self.send_method(0, close)
                if not self._close_ok.wait(timeout):
                    log.warning(
                        "no connection.close-ok from %s within %s s: dropping the socket",
                        self.params.redacted_url(),
                        timeout,
                    )
            except ClientError:
                pass
            self._fail(ConnectionClosed(200, "closed by the client"), lost=False)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
