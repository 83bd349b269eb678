"""A blocking client of RabbitMQ's stream protocol, on the sans-IO ``amqp_protocol.stream``.

One socket, one thread: a request is sent and the socket is read until the response with
its correlation id arrives; what arrives meanwhile unasked (chunks delivered to a
subscription, publishers' confirms and errors) is kept in order for
:meth:`StreamClient.next_delivery` and :meth:`StreamClient.next_publish_answer`. Heartbeats
are answered as they come and sent when due while the client waits. The executors' range
readers, the driver's view of where streams end and the sink's publisher
(``amqp_spark.client.stream.publisher``, which sends Publish frames with :meth:`send` and
takes the answers as they come) use it; each keeps one request in flight at a time, so no
reader thread is needed.
"""

from __future__ import annotations

import collections
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from amqp_protocol.generated import stream as c
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.connection import (
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    Role,
    StreamConnection,
    negotiate,
)
from amqp_protocol.stream.errors import StreamProtocolError
from amqp_protocol.stream.values import OffsetSpecification
from amqp_spark.client.addresses import Address
from amqp_spark.client.exceptions import ClientError, ClientTimeout
from amqp_spark.client.parameters import parse_url_hosts, tls_of_query, tls_query
from amqp_spark.options import redact_uri

C = TypeVar("C", bound=Command)
E = TypeVar("E", bound="StreamEndpoint")

#: The stream protocol's port on RabbitMQ and on the bundled broker.
DEFAULT_STREAM_PORT = 5552
#: The stream protocol over TLS: RabbitMQ's port for it and the scheme its clients use.
DEFAULT_STREAM_TLS_PORT = 5551
SCHEME, TLS_SCHEME = "rabbitmq-stream", "rabbitmq-stream+tls"
_READ_BYTES = 1 << 20
#: What the broker sends unasked that waits, in order, until it is taken.
_KEPT = (c.Deliver, c.DeliverV2, c.PublishConfirm, c.PublishError)


class StreamError(ClientError):
    """The broker answered a request with a response code other than OK."""

    def __init__(self, what: str, code: int) -> None:
        self.code = code
        try:
            name = ResponseCode(code).name
        except ValueError:
            name = "unknown"
        super().__init__(f"{what}: the broker answered {name} ({code:#04x})")


class StreamConnectionLost(ClientError):
    """The connection could not be made, or the broker or the network ended it."""


@dataclass(frozen=True)
class StreamEndpoint:
    """Where a ``rabbitmq-stream://user:password@host:port/vhost`` URI points, or a
    ``rabbitmq-stream+tls://...`` one (TLS; query parameters ``cacertfile``, ``certfile``,
    ``keyfile``, ``verify``, ``server_name_indication`` as in an amqps URI)."""

    host: str
    port: int
    username: str
    password: str
    vhost: str
    tls: ssl.SSLContext | None = field(default=None, repr=False, compare=False)
    server_hostname: str | None = None  #: with TLS, the name asked for (default: ``host``)

    @classmethod
    def parse(cls: type[E], uri: str) -> E:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in (SCHEME, TLS_SCHEME) or not parts.hostname:
            raise ValueError(
                f"not a {SCHEME}://user:password@host:port/vhost URI (or {TLS_SCHEME}://): "
                f"{redact_uri(uri)!r}"
            )
        tls, server_hostname = None, None
        if parts.scheme == TLS_SCHEME:
            tls, server_hostname = tls_of_query(parts.query)
        elif parts.query:
            raise ValueError(f"query parameters of a stream URI need {TLS_SCHEME}://")
        default_port = DEFAULT_STREAM_PORT if tls is None else DEFAULT_STREAM_TLS_PORT
        return cls(
            host=parts.hostname,
            port=parts.port or default_port,
            username=urllib.parse.unquote(parts.username or "guest"),
            password=urllib.parse.unquote(parts.password or "guest"),
            vhost=urllib.parse.unquote(parts.path[1:]) if len(parts.path) > 1 else "/",
            tls=tls,
            server_hostname=server_hostname or (parts.hostname if tls else None),
        )

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def default_stream_uri(uri: str) -> str:
    """The stream protocol's URI of the AMQP URI ``uri`` (what ``streamUri`` defaults to):
    every host it names (with ``addresses``, each address's host) on the stream protocol's
    port, once each, with its credentials and vhost (see ``nodes``); for an amqps ``uri``,
    over TLS on RabbitMQ's port for it, with the ``uri``'s TLS parameters."""
    hosts = parse_url_hosts(uri)
    params = hosts[0]
    quote = urllib.parse.quote
    user, password = quote(params.username, safe=""), quote(params.password, safe="")
    vhost = quote(params.virtual_host, safe="")
    tls = params.ssl_context is not None
    port = DEFAULT_STREAM_TLS_PORT if tls else DEFAULT_STREAM_PORT
    nodes = ",".join(dict.fromkeys(str(Address(h.host, port)) for h in hosts))
    if not tls:
        return f"{SCHEME}://{user}:{password}@{nodes}/{vhost}"
    query = tls_query(uri)
    stream_uri = f"{TLS_SCHEME}://{user}:{password}@{nodes}/{vhost}"
    return f"{stream_uri}?{query}" if query else stream_uri


def _tls_wrapped(sock: socket.socket, endpoint: StreamEndpoint) -> socket.socket:
    """``sock`` after a TLS handshake as ``endpoint`` says (closed if that fails)."""
    assert endpoint.tls is not None
    try:
        return endpoint.tls.wrap_socket(sock, server_hostname=endpoint.server_hostname)
    except OSError as exc:
        sock.close()
        raise StreamConnectionLost(
            f"stream protocol: TLS with {endpoint.address} failed: {exc}"
        ) from None


class StreamClient:
    """An open stream-protocol connection (see the module's docstring)."""

    def __init__(self, endpoint: StreamEndpoint, *, timeout: float = 30.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        try:
            self._sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
        except OSError as exc:
            raise StreamConnectionLost(
                f"stream protocol: cannot connect to {endpoint.address}: {exc}"
            ) from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if endpoint.tls is not None:
            self._sock = _tls_wrapped(self._sock, endpoint)
        self._conn = StreamConnection(Role.CLIENT)
        self._arrived: collections.deque[Command] = collections.deque()
        self.server_properties: dict[str, Any] = {}
        #: Called when the broker or the network ends the connection (not by ``close``).
        self.on_lost: Callable[[], None] | None = None
        try:
            self._open()
        except BaseException:
            self._sock.close()
            raise

    # -- the handshake -------------------------------------------------------------------

    def _open(self) -> None:
        ids = self._conn.next_correlation_id
        peer = self.request(
            c.PeerProperties(ids(), {"product": "amqp-spark", "connection_name": "amqp-spark"}),
            c.PeerPropertiesResponse,
            "peer properties",
        )
        self.server_properties = dict(peer.properties)
        self.request(c.SaslHandshake(ids()), c.SaslHandshakeResponse, "sasl handshake")
        plain = f"\0{self.endpoint.username}\0{self.endpoint.password}".encode()
        self.request(
            c.SaslAuthenticate(ids(), "PLAIN", plain),
            c.SaslAuthenticateResponse,
            f"authenticating as {self.endpoint.username!r}",
        )
        tune = self._expect(c.Tune)
        self.send(
            c.Tune(
                negotiate(tune.frame_max, DEFAULT_FRAME_MAX),
                negotiate(tune.heartbeat, DEFAULT_HEARTBEAT),
            )
        )
        self.request(
            c.Open(ids(), self.endpoint.vhost), c.OpenResponse, f"vhost {self.endpoint.vhost!r}"
        )
        # Deliver v2 carries the committed chunk id; a broker without it keeps v1.
        self.request(
            c.ExchangeCommandVersions(ids(), [c.CommandVersion(c.DeliverV2.KEY, 1, 2)]),
            c.ExchangeCommandVersionsResponse,
            "command versions",
        )

    # -- requests ------------------------------------------------------------------------

    def stream_stats(self, stream: str) -> dict[str, int]:
        """``first_chunk_id`` and ``committed_chunk_id`` of ``stream`` (-1: no chunk)."""
        answer = self.request(
            c.StreamStats(self._conn.next_correlation_id(), stream),
            c.StreamStatsResponse,
            f"stream stats of {stream!r}",
        )
        return dict(answer.stats)

    def subscribe(
        self,
        subscription_id: int,
        stream: str,
        offset: OffsetSpecification,
        credit: int,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        """Subscribe with ``credit`` chunks; ``properties`` as RabbitMQ takes them
        (``filter.N``, ``match-unfiltered``)."""
        self.request(
            c.Subscribe(
                self._conn.next_correlation_id(),
                subscription_id,
                stream,
                offset,
                credit,
                dict(properties or {}),
            ),
            c.SubscribeResponse,
            f"subscribing to stream {stream!r}",
        )

    def unsubscribe(self, subscription_id: int) -> None:
        self.request(
            c.Unsubscribe(self._conn.next_correlation_id(), subscription_id),
            c.UnsubscribeResponse,
            "unsubscribing",
        )
        self._arrived = collections.deque(
            cmd
            for cmd in self._arrived
            if not (isinstance(cmd, c.Deliver | c.DeliverV2))
            or cmd.subscription_id != subscription_id
        )

    def credit(self, subscription_id: int, chunks: int) -> None:
        self.send(c.Credit(subscription_id, chunks))

    def next_delivery(self, timeout: float) -> c.Deliver | c.DeliverV2 | None:
        """The next chunk delivered to a subscription, or None after ``timeout`` seconds."""
        cmd = self._take((c.Deliver, c.DeliverV2), timeout)
        return cmd if isinstance(cmd, c.Deliver | c.DeliverV2) else None

    def next_publish_answer(self, timeout: float) -> c.PublishConfirm | c.PublishError | None:
        """The next confirm or error of a publisher, or None after ``timeout`` seconds."""
        cmd = self._take((c.PublishConfirm, c.PublishError), timeout)
        return cmd if isinstance(cmd, c.PublishConfirm | c.PublishError) else None

    @property
    def frame_max(self) -> int:
        """The largest frame the broker accepts (tuned at the handshake)."""
        return self._conn.frame_max

    def next_correlation_id(self) -> int:
        """A correlation id for a request (:meth:`request`) of the caller's own."""
        return self._conn.next_correlation_id()

    def close(self, move_on: bool = False) -> None:
        """Close the connection; with ``move_on``, the next connection of this process goes
        to the next node first, as after a lost one (this node failed what was asked of it:
        a stream it cannot serve for now, a silence)."""
        if move_on and self.on_lost is not None:
            self.on_lost()
        self.on_lost = None  # ended by us
        try:
            self.request(
                c.Close(self._conn.next_correlation_id(), ResponseCode.OK, "done"),
                c.CloseResponse,
                "closing",
                timeout=2.0,
            )
        except (ClientError, OSError, StreamProtocolError):
            pass  # closing anyway
        finally:
            self._sock.close()

    def __enter__(self) -> StreamClient:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self.close(move_on=isinstance(error, Exception))

    # -- the wire ------------------------------------------------------------------------

    def send(self, command: Command) -> None:
        """Write ``command``'s frame without waiting for anything."""
        try:
            self._sock.sendall(self._conn.send(command))
        except OSError as exc:
            raise self._lost(exc) from None

    def request(
        self, command: Command, kind: type[C], what: str, *, timeout: float | None = None
    ) -> C:
        """Send ``command`` and return the broker's answer of ``kind``; raises
        ``StreamError`` naming ``what`` when its response code is not OK."""
        self.send(command)
        answer = self._expect(kind, timeout=timeout)
        code = getattr(answer, "response_code", ResponseCode.OK)
        if code != ResponseCode.OK:
            raise StreamError(f"stream protocol at {self.endpoint.address}: {what}", code)
        return answer

    def _expect(self, kind: type[C], *, timeout: float | None = None) -> C:
        """The next command of ``kind``; what else arrives meanwhile is kept or handled."""
        wait = self.timeout if timeout is None else timeout
        answer = self._take((kind,), wait)
        if answer is None:
            raise ClientTimeout(
                f"stream protocol at {self.endpoint.address}: no {kind.NAME} within {wait:.0f} s"
            )
        return answer

    def _take(self, kinds: tuple[type[C], ...], timeout: float) -> C | None:
        """The first command of ``kinds`` to arrive, or None after ``timeout`` seconds.
        What arrives before it is kept in order when it is of ``_KEPT`` (for whoever takes
        it later), else handled (``_unsolicited``)."""
        deadline = time.monotonic() + timeout
        kept: list[Command] = []
        try:
            while True:
                while self._arrived:
                    cmd = self._arrived.popleft()
                    if isinstance(cmd, kinds):
                        return cmd
                    if isinstance(cmd, _KEPT):
                        kept.append(cmd)
                    else:
                        self._unsolicited(cmd)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._read(left)
        finally:
            self._arrived.extendleft(reversed(kept))

    def _unsolicited(self, cmd: Command) -> None:
        if isinstance(cmd, c.Close):
            raise self._dropped(
                f"the broker closed the connection ({cmd.closing_code:#04x} {cmd.closing_reason})"
            )
        if isinstance(cmd, c.CreditResponse):
            raise StreamError(
                f"stream protocol at {self.endpoint.address}: credit to subscription "
                f"{cmd.subscription_id}",
                cmd.response_code,
            )
        if isinstance(cmd, c.MetadataUpdate):
            raise StreamError(
                f"stream protocol at {self.endpoint.address}: stream {cmd.stream!r} "
                "became unavailable",
                cmd.code,
            )
        # Heartbeats and anything else the client does not ask for: nothing to do.

    def _read(self, timeout: float) -> None:
        """Read once: what comes within ``timeout`` s (or half a heartbeat interval, so
        that the client's heartbeats go out while it waits)."""
        if self._conn.heartbeat_due():
            self.send(c.Heartbeat())
        heartbeat = self._conn.heartbeat or timeout
        self._sock.settimeout(max(min(timeout, heartbeat / 2), 0.001))
        try:
            data = self._sock.recv(_READ_BYTES)
        except TimeoutError:
            return
        except OSError as exc:
            raise self._lost(exc) from None
        if not data:
            raise self._lost(None)
        try:
            self._arrived.extend(self._conn.receive_data(data))
        except StreamProtocolError as exc:
            raise self._dropped(f"bad data from the broker: {exc}") from None

    def _lost(self, exc: OSError | None) -> StreamConnectionLost:
        return self._dropped("the broker closed the connection" if exc is None else str(exc))

    def _dropped(self, why: str) -> StreamConnectionLost:
        """The connection is over (``why``): closed, ``on_lost`` told, the error to raise."""
        self._sock.close()
        if self.on_lost is not None:
            self.on_lost()
        return StreamConnectionLost(f"stream protocol at {self.endpoint.address}: {why}")
