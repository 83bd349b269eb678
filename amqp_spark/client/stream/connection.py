"""A blocking stream-protocol connection: the socket, the handshake, and a reader thread.

Why a reader thread rather than a synchronous loop in the caller: a stream connection
carries traffic no caller waits for at that moment (heartbeats both ways, publish confirms
arriving while the publisher encodes its next batch, chunks arriving while the reader
converts the previous one, ``MetadataUpdate`` when a stream goes away). With a thread the
heartbeats keep flowing however long a caller works between calls, confirms and chunks
queue up without the caller polling, and requests of several threads (a publisher and a
``StreamStats`` of the same task) share one connection. The cost is one hand-over per
frame (a chunk: many messages), not per message.

Threads and locks, as in ``client.connection``: callers encode their command and write it
with one ``sendall`` under the send lock, which also guards the sans-IO ``StreamConnection``
(``send``, ``next_correlation_id``); the reader thread is the only one to call its
``receive_data``. A request registers its correlation id under the state lock before its
frame is written; the reader thread hands the response over under the same lock. Lock
order: send lock, then state lock; the reader thread never writes while it holds the
state lock, and calls subscriptions and publisher listeners outside it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from amqp_protocol.generated import stream as c
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.connection import Role, State, StreamConnection, negotiate
from amqp_protocol.stream.errors import StreamProtocolError
from amqp_protocol.stream.values import OffsetSpecification, PublishedMessage

from .. import backoff
from ..addresses import rotation_for
from .abc import PublisherListener
from .exceptions import (
    StreamConnectionError,
    StreamError,
    StreamNoNodeAnswered,
    StreamTimeout,
)
from .parameters import StreamParameters, parse_stream_url
from .subscription import ChunkDelivery, Subscription

log = logging.getLogger(__name__)

#: How long a request waits for its response unless told otherwise.
REQUEST_TIMEOUT = 30.0
#: How long close() waits for the server's CloseResponse before dropping the socket.
CLOSE_TIMEOUT = 5.0
#: A sendall that makes no progress for this long means the peer is gone.
SEND_TIMEOUT = 60.0
#: How often the reader thread wakes up when there is no heartbeat to keep.
IDLE_TICK = 1.0
_RECV_SIZE = 1 << 20
#: What the client asks the broker to deliver with: Deliver v2 carries the committed chunk id.
_DELIVER_VERSIONS = [c.CommandVersion(c.DeliverV2.KEY, 1, 2)]

R = TypeVar("R", bound=Command)


def connect(
    url: str,
    *,
    ssl_context: ssl.SSLContext | None = None,
    properties: dict[str, str] | None = None,
    retries: int = 0,
    sleep: Callable[[float], None] = time.sleep,
    connection_timeout: float | None = None,
) -> StreamClient:
    """An open connection to the broker at ``url`` (see ``parameters``), trying each
    address it names once per attempt, from the one this process's rotation puts first,
    and ``1 + retries`` attempts with ``client.backoff``'s pauses. ``StreamNoNodeAnswered``
    (naming each address and why) when every attempt failed on several addresses, else the
    one address's ``StreamConnectionError``. ``properties`` go into ``PeerProperties``;
    ``connection_timeout`` (seconds) replaces the URI's."""
    targets = parse_stream_url(url, ssl_context=ssl_context)
    if connection_timeout is not None:
        targets = tuple(replace(t, connection_timeout=connection_timeout) for t in targets)
    by_address = {params.address: params for params in targets}
    rotation = rotation_for(by_address)
    failures: list[tuple[str, BaseException]] = []
    for _ in backoff.attempts(retries, sleep):
        for address in rotation.order():
            try:
                client = StreamClient(by_address[address], properties=properties)
            except StreamConnectionError as e:
                failures.append((str(address), e))
                continue
            rotation.answered(address)
            client.on_lost = functools.partial(rotation.lost, address)
            return client
    if len(failures) == 1:
        raise failures[0][1]
    raise StreamNoNodeAnswered(failures)


class _Reply:
    """The response to one request, handed over by the reader thread."""

    __slots__ = ("command", "done")

    def __init__(self) -> None:
        self.command: Command | None = None
        self.done = threading.Event()


class StreamClient:
    """One stream-protocol connection, open on construction (``connect()`` builds one from
    a URI). Thread-safe."""

    def __init__(
        self, params: StreamParameters, *, properties: dict[str, str] | None = None
    ) -> None:
        self.params = params
        self.address = str(params.address)
        #: The broker's PeerPropertiesResponse and OpenResponse properties.
        self.server_properties: dict[str, str] = {}
        self.connection_properties: dict[str, str] = {}
        self.frame_max = params.frame_max
        self.heartbeat = 0
        #: Called (on whichever thread finds out) when the connection ends other than by
        #: our close(): the network failed or the server closed it.
        self.on_lost: Callable[[], None] | None = None
        self._proto = StreamConnection(Role.CLIENT, frame_max=params.frame_max)
        self._send_lock = threading.Lock()
        self._tls_lock: threading.Lock | None = None
        self._state = threading.Lock()  # _pending, _subscriptions, _publishers, _error
        self._pending: dict[int, _Reply] = {}
        self._subscriptions: dict[int, Subscription] = {}
        self._publishers: dict[int, tuple[str, PublisherListener]] = {}
        self._error: StreamError | None = None
        self._closing = False
        self._sock = self._open_socket()
        try:
            self._handshake(properties or {}, time.monotonic() + params.connection_timeout)
        except OSError as e:
            self._sock.close()
            raise StreamConnectionError(
                self.address, f"connection lost during the handshake: {e}"
            ) from e
        except BaseException:
            self._sock.close()
            raise
        self._sock.settimeout(SEND_TIMEOUT)
        self._thread = threading.Thread(
            target=self._read_loop, name=f"amqp-stream {self.address}", daemon=True
        )
        self._thread.start()
        try:
            # RabbitMQ answers with what it reads and delivers with v2 from then on.
            self._request(
                lambda cid: c.ExchangeCommandVersions(cid, _DELIVER_VERSIONS),
                c.ExchangeCommandVersionsResponse,
            )
        except StreamError:
            self.close()
            raise

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<amqp_spark.client.stream.StreamClient {self.params.redacted_url()} {state}>"

    @property
    def is_open(self) -> bool:
        return self._error is None

    # -- opening ------------------------------------------------------------------------------

    def _open_socket(self) -> socket.socket:
        p = self.params
        try:
            sock = socket.create_connection((p.host, p.port), timeout=p.connection_timeout)
        except OSError as e:
            raise StreamConnectionError(
                self.address, f"cannot connect to {p.redacted_url()}: {e.strerror or e}"
            ) from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if p.ssl_context is None:
            return sock
        try:
            tls = p.ssl_context.wrap_socket(sock, server_hostname=p.host)
        except (ssl.SSLError, OSError) as e:
            sock.close()
            raise StreamConnectionError(self.address, f"TLS handshake failed: {e}") from e
        self._tls_lock = threading.Lock()
        return tls

    def _handshake(self, properties: dict[str, str], deadline: float) -> None:
        """PeerProperties ... OpenResponse, synchronously, before the reader thread starts."""
        p = self.params
        ids = self._proto.next_correlation_id
        received: list[Command] = []
        wanted = {"product": "amqp-spark", "information": "amqp_spark.client.stream"}
        self._sock.sendall(self._proto.send(c.PeerProperties(ids(), wanted | properties)))
        peer = self._handshake_reply(c.PeerPropertiesResponse, received, deadline)
        self._check(peer.response_code, "PeerProperties refused")
        self.server_properties = dict(peer.properties)
        self._sock.sendall(self._proto.send(c.SaslHandshake(ids())))
        sasl = self._handshake_reply(c.SaslHandshakeResponse, received, deadline)
        if "PLAIN" not in sasl.mechanisms:
            raise StreamConnectionError(
                self.address,
                f"no common SASL mechanism: the broker offers {' '.join(sasl.mechanisms)!r}, "
                "this client speaks PLAIN",
            )
        plain = b"\0" + p.username.encode() + b"\0" + p.password.encode()
        self._sock.sendall(self._proto.send(c.SaslAuthenticate(ids(), "PLAIN", plain)))
        auth = self._handshake_reply(c.SaslAuthenticateResponse, received, deadline)
        self._check(auth.response_code, f"authentication of user {p.username!r} refused")
        tune = self._handshake_reply(c.Tune, received, deadline)
        self.frame_max = negotiate(tune.frame_max, p.frame_max)
        self.heartbeat = negotiate(tune.heartbeat, p.heartbeat)
        self._sock.sendall(
            self._proto.send(c.Tune(self.frame_max, self.heartbeat))
            + self._proto.send(c.Open(ids(), p.virtual_host))
        )
        opened = self._handshake_reply(c.OpenResponse, received, deadline)
        self._check(opened.response_code, f"opening virtual host {p.virtual_host!r} refused")
        self.connection_properties = dict(opened.connection_properties)
        self._proto.frame_max = self.frame_max

    def _handshake_reply(self, kind: type[R], received: list[Command], deadline: float) -> R:
        """The next command, which must be of ``kind`` (heartbeats skipped)."""
        while True:
            while received:
                command = received.pop(0)
                if isinstance(command, c.Heartbeat):
                    continue
                if isinstance(command, c.Close):
                    self._check(command.closing_code, f"closed: {command.closing_reason}")
                if not isinstance(command, kind):
                    raise StreamConnectionError(
                        self.address, f"expected {kind.NAME} from the broker, got {command.NAME}"
                    )
                return command
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StreamConnectionError(
                    self.address, f"timed out waiting for {kind.NAME} in the handshake"
                )
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(_RECV_SIZE)
            except TimeoutError:
                continue
            if not data:
                raise StreamConnectionError(
                    self.address,
                    f"the broker closed the connection while we waited for {kind.NAME}",
                )
            try:
                received += self._proto.receive_data(data)
            except StreamProtocolError as e:
                raise StreamConnectionError(
                    self.address, f"protocol error in the handshake: {e}", e.code
                ) from e

    def _check(self, code: int, what: str) -> None:
        """A handshake refusal as the error that says so."""
        if code != ResponseCode.OK:
            raise StreamConnectionError(self.address, what, code)

    # -- requests (any thread) ----------------------------------------------------------------

    def _request(
        self,
        make: Callable[[int], Command],
        kind: type[R],
        timeout: float = REQUEST_TIMEOUT,
        prepare: Callable[[], None] | None = None,
    ) -> R:
        """Send the request ``make(correlation_id)`` and wait for its response of ``kind``.
        ``prepare`` runs under the send lock before the write (registering what the
        response will be about, e.g. a subscription)."""
        reply = _Reply()
        with self._send_lock:
            correlation_id = self._proto.next_correlation_id()
            command = make(correlation_id)
            with self._state:
                self._check_open()
                self._pending[correlation_id] = reply
            if prepare is not None:
                prepare()
            self._write(self._encode(command))
        if not reply.done.wait(timeout):
            with self._state:
                self._pending.pop(correlation_id, None)
            raise StreamTimeout(self.address, f"no response to {command.NAME} within {timeout} s")
        if reply.command is None:
            self._check_open()
        response = reply.command
        if not isinstance(response, kind):
            raise StreamConnectionError(
                self.address, f"the broker answered {command.NAME} with {response!r}"
            )
        return response

    def _checked(
        self, make: Callable[[int], Command], kind: type[R], what: str, *allowed: int
    ) -> R:
        """``_request``, raising ``StreamError`` unless the response code is OK or one of
        ``allowed``."""
        response = self._request(make, kind)
        code = getattr(response, "response_code", ResponseCode.OK)
        if code != ResponseCode.OK and code not in allowed:
            raise StreamError(self.address, what, code)
        return response

    def send(self, command: Command) -> None:
        """Write a command that has no response (``Publish``, ``Credit``, ``StoreOffset``)."""
        with self._send_lock:
            self._check_open()
            self._write(self._encode(command))

    def _encode(self, command: Command) -> bytes:
        try:
            return self._proto.send(command)
        except StreamProtocolError as e:
            raise StreamConnectionError(self.address, str(e), e.code) from e

    def _write(self, data: bytes) -> None:
        """``sendall`` under the send lock (held by the caller)."""
        try:
            if self._tls_lock is None:
                self._sock.sendall(data)
            else:
                with self._tls_lock:
                    self._sock.sendall(data)
        except OSError as e:
            # A partial write leaves a half frame on the wire: the connection is unusable.
            self._fail(StreamConnectionError(self.address, f"connection lost while sending: {e}"))
            self._check_open()

    def _check_open(self) -> None:
        if self._error is not None:
            raise self._error

    # -- streams ------------------------------------------------------------------------------

    def metadata(self, streams: Sequence[str]) -> c.MetadataResponse:
        """The brokers and each stream's leader and replicas (a stream that does not exist
        has ``STREAM_DOES_NOT_EXIST`` as its ``response_code``)."""
        return self._request(lambda cid: c.Metadata(cid, list(streams)), c.MetadataResponse)

    def stream_stats(self, stream: str) -> dict[str, int]:
        """``first_chunk_id``, ``committed_chunk_id`` (and what else the broker tells) of
        ``stream``; -1 for a stream that has no chunk yet."""
        response = self._checked(
            lambda cid: c.StreamStats(cid, stream),
            c.StreamStatsResponse,
            f"stream statistics of {stream!r} refused",
        )
        return dict(response.stats)

    def create_stream(self, stream: str, arguments: dict[str, str] | None = None) -> bool:
        """Create ``stream``; False when it exists already."""
        response = self._checked(
            lambda cid: c.Create(cid, stream, arguments or {}),
            c.CreateResponse,
            f"creating stream {stream!r} refused",
            ResponseCode.STREAM_ALREADY_EXISTS,
        )
        return response.response_code == ResponseCode.OK

    def delete_stream(self, stream: str) -> None:
        self._checked(
            lambda cid: c.Delete(cid, stream), c.DeleteResponse, f"deleting {stream!r} refused"
        )

    def partitions(self, super_stream: str) -> list[str]:
        """The partition streams of ``super_stream``, in order."""
        response = self._checked(
            lambda cid: c.Partitions(cid, super_stream),
            c.PartitionsResponse,
            f"partitions of super stream {super_stream!r} refused",
        )
        return list(response.streams)

    def route(self, routing_key: str, super_stream: str) -> list[str]:
        """The partitions of ``super_stream`` that ``routing_key`` goes to."""
        response = self._checked(
            lambda cid: c.Route(cid, routing_key, super_stream),
            c.RouteResponse,
            f"routing {routing_key!r} in super stream {super_stream!r} refused",
        )
        return list(response.streams)

    # -- offsets ------------------------------------------------------------------------------

    def query_offset(self, reference: str, stream: str) -> int | None:
        """The offset stored under ``reference`` for ``stream``; None when none is."""
        response = self._checked(
            lambda cid: c.QueryOffset(cid, reference, stream),
            c.QueryOffsetResponse,
            f"querying offset {reference!r} of {stream!r} refused",
            ResponseCode.NO_OFFSET,
        )
        return None if response.response_code == ResponseCode.NO_OFFSET else response.offset

    def store_offset(self, reference: str, stream: str, offset: int) -> None:
        self.send(c.StoreOffset(reference, stream, offset))

    # -- consuming ----------------------------------------------------------------------------

    def subscribe(
        self,
        stream: str,
        offset: OffsetSpecification,
        credit: int,
        properties: dict[str, str] | None = None,
    ) -> Subscription:
        """Subscribe to ``stream`` from ``offset`` with ``credit`` chunks in flight; take
        chunks with ``Subscription.next_chunk`` and grant one ``credit`` per chunk taken."""
        with self._state:
            subscription_id = next((i for i in range(256) if i not in self._subscriptions), None)
        if subscription_id is None:
            raise StreamError(self.address, "all 256 subscription ids are in use")
        subscription = Subscription(
            subscription_id, stream, self.address, self._credit, self._unsubscribe
        )

        def register() -> None:
            with self._state:
                self._subscriptions[subscription_id] = subscription

        try:
            response = self._request(
                lambda cid: c.Subscribe(
                    cid, subscription_id, stream, offset, credit, properties or {}
                ),
                c.SubscribeResponse,
                prepare=register,
            )
        except StreamError:
            self._forget_subscription(subscription_id)
            raise
        if response.response_code != ResponseCode.OK:
            self._forget_subscription(subscription_id)
            raise StreamError(
                self.address, f"subscribing to {stream!r} refused", response.response_code
            )
        return subscription

    def _credit(self, subscription_id: int, chunks: int) -> None:
        self.send(c.Credit(subscription_id, chunks))

    def _unsubscribe(self, subscription_id: int) -> None:
        try:
            if self.is_open:
                self._request(
                    lambda cid: c.Unsubscribe(cid, subscription_id), c.UnsubscribeResponse
                )
        finally:
            self._forget_subscription(subscription_id)

    def _forget_subscription(self, subscription_id: int) -> None:
        with self._state:
            self._subscriptions.pop(subscription_id, None)

    # -- publishing ---------------------------------------------------------------------------

    def declare_publisher(
        self,
        publisher_id: int,
        stream: str,
        listener: PublisherListener,
        reference: str = "",
    ) -> None:
        """Declare publisher ``publisher_id`` (0-255) on ``stream``; a ``reference`` turns on
        the broker's deduplication by publishing id. ``listener`` gets the confirms."""
        with self._state:
            self._publishers[publisher_id] = (stream, listener)
        try:
            self._checked(
                lambda cid: c.DeclarePublisher(cid, publisher_id, reference, stream),
                c.DeclarePublisherResponse,
                f"declaring publisher {publisher_id} on {stream!r} refused",
            )
        except StreamError:
            with self._state:
                self._publishers.pop(publisher_id, None)
            raise

    def publish(self, publisher_id: int, messages: Sequence[PublishedMessage]) -> None:
        """Send ``messages`` (as ``Publish``, or ``Publish`` v2 when one has a filter value),
        in as many frames as ``frame_max`` needs; confirms go to the publisher's listener."""
        if not messages:
            return
        kind = c.PublishV2 if any(m.filter_value is not None for m in messages) else c.Publish
        command = kind(publisher_id, list(messages))
        frame = command.encode()
        if self.frame_max and len(frame) - 4 > self.frame_max:
            if len(messages) == 1:
                raise StreamError(
                    self.address,
                    f"a message of {len(frame)} bytes does not fit in a frame of "
                    f"{self.frame_max} bytes",
                )
            half = len(messages) // 2
            self.publish(publisher_id, messages[:half])
            self.publish(publisher_id, messages[half:])
            return
        self.send(command)

    def query_publisher_sequence(self, reference: str, stream: str) -> int:
        """The last publishing id the broker wrote for ``reference`` on ``stream`` (0: none)."""
        response = self._checked(
            lambda cid: c.QueryPublisherSequence(cid, reference, stream),
            c.QueryPublisherSequenceResponse,
            f"querying publisher sequence {reference!r} of {stream!r} refused",
        )
        return response.sequence

    def delete_publisher(self, publisher_id: int) -> None:
        try:
            self._checked(
                lambda cid: c.DeletePublisher(cid, publisher_id),
                c.DeletePublisherResponse,
                f"deleting publisher {publisher_id} refused",
            )
        finally:
            with self._state:
                self._publishers.pop(publisher_id, None)

    # -- the reader thread --------------------------------------------------------------------

    def _read_loop(self) -> None:
        sock = self._sock
        try:
            while self._error is None:
                if self._readable(sock) and not self._read(sock):
                    return
                self._keep_heartbeat()
        except (OSError, ValueError) as e:  # ValueError: select() on a socket we closed
            self._fail(StreamConnectionError(self.address, f"connection lost: {e}"))
        except Exception as e:  # a bug here must not leave callers waiting forever
            log.exception("stream reader thread of %s failed", self.params.redacted_url())
            self._fail(StreamConnectionError(self.address, f"reader thread failed: {e!r}"))

    def _readable(self, sock: socket.socket) -> bool:
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        tick = self.heartbeat / 2 if self.heartbeat else IDLE_TICK
        readable, _, _ = select.select([sock], [], [], tick)
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
            why = "closed by the client" if self._closing else "the broker closed the socket"
            self._fail(StreamConnectionError(self.address, why), lost=not self._closing)
            return False
        if self._proto.state is State.CLOSED:  # our Close was answered: nothing more counts
            self._fail(StreamConnectionError(self.address, "closed by the client"), lost=False)
            return False
        try:
            commands = self._proto.receive_data(data)
        except StreamProtocolError as e:
            with contextlib.suppress(StreamError), self._send_lock:
                self._write(self._proto.close_for(e))
            self._fail(StreamConnectionError(self.address, f"protocol error: {e}", e.code))
            return False
        for command in commands:
            self._dispatch(command)
        return self._error is None

    def _dispatch(self, command: Command) -> None:
        if isinstance(command, c.DeliverV2 | c.Deliver):
            committed = command.committed_chunk_id if isinstance(command, c.DeliverV2) else None
            subscription = self._subscriptions.get(command.subscription_id)
            if subscription is not None:
                subscription.deliver(ChunkDelivery(memoryview(command.chunk), committed))
        elif isinstance(command, c.PublishConfirm | c.PublishError):
            self._to_publisher(command)
        elif isinstance(command, c.CreditResponse):
            # Sent only when a Credit was refused: the subscription is gone.
            self._end_subscription(
                command.subscription_id,
                StreamError(self.address, "credit refused", command.response_code),
            )
        elif isinstance(command, c.MetadataUpdate):
            self._stream_gone(command.stream, command.code)
        elif isinstance(command, c.Close):
            self._closed_by_broker(command)
        elif isinstance(command, c.Heartbeat):
            pass  # receiving it was the point
        elif command.is_response:
            with self._state:
                reply = self._pending.pop(command.correlation_id, None)  # type: ignore[attr-defined]
            if reply is None:
                log.warning(
                    "ignoring %s from %s: no request waits for it", command.NAME, self.address
                )
            else:
                reply.command = command
                reply.done.set()
        else:
            log.warning("ignoring unexpected %s from %s", command.NAME, self.address)

    def _to_publisher(self, command: c.PublishConfirm | c.PublishError) -> None:
        with self._state:
            entry = self._publishers.get(command.publisher_id)
        if entry is None:
            return
        _, listener = entry
        if isinstance(command, c.PublishConfirm):
            listener.confirmed(command.publishing_ids)
        else:
            listener.failed(command.errors)

    def _end_subscription(self, subscription_id: int, error: StreamError) -> None:
        with self._state:
            subscription = self._subscriptions.pop(subscription_id, None)
        if subscription is not None:
            subscription.end(error)

    def _stream_gone(self, stream: str, code: int) -> None:
        """``MetadataUpdate``: ``stream`` was deleted or its leader moved; the broker drops
        its subscriptions and publishers."""
        error = StreamError(self.address, f"stream {stream!r} is no longer available here", code)
        with self._state:
            subscriptions = [s for s in self._subscriptions.values() if s.stream == stream]
            for s in subscriptions:
                del self._subscriptions[s.subscription_id]
            publishers = [(i, e) for i, e in self._publishers.items() if e[0] == stream]
            for i, _ in publishers:
                del self._publishers[i]
        for s in subscriptions:
            s.end(error)
        for _, (_, listener) in publishers:
            listener.closed(error)

    def _closed_by_broker(self, close: c.Close) -> None:
        with contextlib.suppress(StreamError), self._send_lock:
            self._write(self._proto.send(c.CloseResponse(close.correlation_id, ResponseCode.OK)))
        self._fail(
            StreamConnectionError(
                self.address,
                f"the broker closed the connection: {close.closing_reason}",
                close.closing_code,
            )
        )

    def _keep_heartbeat(self) -> None:
        if self._error is not None:
            return
        if self._proto.peer_timed_out():
            self._fail(
                StreamConnectionError(
                    self.address,
                    f"missed heartbeats: the broker sent nothing for {2 * self.heartbeat} s",
                )
            )
        elif self._proto.heartbeat_due() and not self._send_lock.locked():
            # A caller holding the send lock is writing, which the broker counts as a sign
            # of life; waiting for it could stall this thread's reading behind a slow write.
            with contextlib.suppress(StreamError):
                self.send(c.Heartbeat())

    # -- closing ------------------------------------------------------------------------------

    def _fail(self, error: StreamError, lost: bool = True) -> None:
        """Record why the connection ended, wake every waiter, drop the socket; ``lost``
        unless our close() ended it. Idempotent."""
        with self._state:
            if self._error is not None:
                return
            self._error = error
            pending = list(self._pending.values())
            self._pending.clear()
            subscriptions = list(self._subscriptions.values())
            self._subscriptions.clear()
            publishers = [listener for _, listener in self._publishers.values()]
            self._publishers.clear()
        for reply in pending:
            reply.done.set()
        for subscription in subscriptions:
            subscription.end(error)
        for listener in publishers:
            listener.closed(error)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        if lost and self.on_lost is not None:
            self.on_lost()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Close cleanly: ``Close``, then wait (at most ``timeout``) for its response."""
        if self._error is None and not self._closing:
            self._closing = True
            try:
                self._request(
                    lambda cid: c.Close(cid, ResponseCode.OK, "closed by the client"),
                    c.CloseResponse,
                    timeout,
                )
            except StreamError as e:
                log.warning("closing %s: %s; dropping the socket", self.address, e)
            self._fail(StreamConnectionError(self.address, "closed by the client"), lost=False)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def __enter__(self) -> StreamClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
