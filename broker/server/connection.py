"""One client connection: an asyncio Protocol feeding the sans-IO protocol layer.

Output is collected per event-loop turn and written with one ``transport.write``. Reading
stops (``pause_reading``) while the transport's write buffer is over its high watermark or
while the broker's memory is over its watermark and this connection publishes: a peer that
stops reading its socket holds at most ``write_buffer_high`` bytes of output, and whatever it
publishes waits in its own socket (TCP flow control), as RabbitMQ's credit flow does.

Hostile input is bounded too: the handshake must finish within ``handshake_timeout``, a
refused login is closed after ``auth_failure_delay``, the broker holds at most
``connection_limit`` connections (descriptors.py) and a user ``connection_limit_of(user)``,
and a message body declared larger than ``max_message_size`` is discarded as it arrives and
refused (406) once it is all in, as RabbitMQ 4 does.
"""

from __future__ import annotations

import asyncio
import logging
import platform
import time
from collections.abc import Callable
from typing import Any

from amqp_protocol import Connection, Method, Properties, Spec, errors, events
from amqp_protocol.frames import FRAME_OVERHEAD, deliver_frames
from amqp_protocol.generated.any_version import (
    ConnectionClose,
    ConnectionCloseOk,
    ConnectionOpen,
    ConnectionStartOk,
    ConnectionTuneOk,
    ConnectionUpdateSecret,
)
from amqp_protocol.handshake import Handshake, State

from .. import tls
from ..access import Access
from ..auth import EXTERNAL, offered_mechanisms, parse_response
from ..config import User
from ..model.message import Message
from ..model.stats import MessageStats
from ..model.vhost import VirtualHost
from ..version import __version__
from .abc import Respond, Server
from .after_close import discard_until_closed
from .channel import ServerChannel
from .connection_view import ConnectionSnapshot, address
from .content_pump import ContentPump
from .dialect import Dialect, Dialects

log = logging.getLogger("broker.connection")

_CAPABILITIES = {
    name: True
    for name in (
        "publisher_confirms",
        "exchange_exchange_bindings",
        "basic.nack",
        "consumer_cancel_notify",
        "connection.blocked",
        "consumer_priorities",
        "per_consumer_qos",
        "authentication_failure_close",
        "direct_reply_to",
    )
}
#: Seconds a peer has to answer our connection.close.
CLOSE_TIMEOUT = 3.0
_LOOPBACK_PREFIXES = ("127.", "::1", "::ffff:127.")


_OPEN = State.OPEN
#: What a channel we are closing still accepts (spec: the rest MUST be discarded).
_CHANNEL_CLOSING = frozenset({"channel.close", "channel.close-ok"})


class AMQPConnection(asyncio.Protocol):
    """``dialects``: the versions it speaks; the client's protocol header picks one."""

    #: while ``handle_request`` runs: the request's channel and how its replies are framed
    #: (a class default: set only on connections that answer requests, see ``__init__``)
    _answering: tuple[int, Respond] | None = None

    def __init__(self, server: Server, dialects: Dialects) -> None:
        self.server = server
        self.config = server.config
        self.loop = server.loop
        self._dialects = dialects
        #: the negotiated version's dialect (set by the protocol header)
        self.dialect: Dialect | None = None
        self.proto = Connection(
            role="server",
            supported=dialects.specs,
            max_body_size=server.config.max_message_size,
        )
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.user: str | None = None
        self.access: Access = None  # type: ignore[assignment]  # set by connection.open
        self.vhost: VirtualHost = None  # type: ignore[assignment]  # set by connection.open
        self.channels: dict[int, ServerChannel] = {}
        #: the counts of its closed channels (``connection_stats`` adds the open ones')
        self.stats = MessageStats()
        #: when the socket was accepted (``time.time()``), for the management API
        self.connected_at = time.time()
        self.client_properties: dict[str, Any] = {}
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._write_paused = False
        self._starved = False
        self._memory_blocked = False
        self._publisher = False
        self._confirming: list[ServerChannel] = []
        #: the connection class's state machine (set with the dialect)
        self._handshake: Handshake | None = None
        self._last_recv = self._last_send = self.loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        #: contents sent frame by frame, cancellable by a reject (content_pump), in dialects
        #: with ``cancellable_contents``
        self._pump = ContentPump()
        # At most 29 attributes: CPython 3.11 keeps an instance's attributes as inline values
        # with keys shared by the class (loaded at fixed offsets) only up to 29 keys; a 30th
        # turns every connection's attributes into a dict, looked up on every access
        # (benchmarks/broker_work.py --adaptive showed it: LOAD_ATTR_WITH_HINT).

    @property
    def heartbeat(self) -> int:
        """The agreed heartbeat in seconds (0: none, or not tuned yet)."""
        tuning = None if self._handshake is None else self._handshake.tuning
        return 0 if tuning is None else tuning.heartbeat

    @property
    def _peer_common_name(self) -> str | None:
        """The verified client certificate's common name (TLS), for EXTERNAL."""
        return None if self.transport is None else tls.peer_common_name(self.transport)

    @property
    def spec(self) -> Spec:
        assert self.proto.spec is not None
        return self.proto.spec

    @property
    def handshake(self) -> Handshake:
        """The connection class's state machine, once the protocol header chose the version."""
        assert self._handshake is not None
        return self._handshake

    @property
    def opened(self) -> bool:
        """connection.open-ok is sent and the connection is not closing."""
        return self._handshake is not None and self._handshake.state is State.OPEN

    @property
    def closed(self) -> bool:
        """The socket is closed, or closing without a close handshake."""
        return self._closed

    @property
    def memory_blocked(self) -> bool:
        """Reading is stopped: the broker is over its memory watermark and this connection
        publishes."""
        return self._memory_blocked

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.config.write_buffer_high)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        limit = self.server.connection_limit
        if len(self.server.connections) >= limit:
            self.server.refusals.refused(f"connection limit ({limit}) reached")
            self._closed = True
            transport.abort()
            return
        self.server.refusals.accepted()
        self.server.connections.add(self)
        self._timer = self.loop.call_later(self.config.handshake_timeout, self._handshake_timeout)
        log.info("accepting AMQP connection %s", self.peer)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._report_unanswered_close()
        if self._timer is not None:
            self._timer.cancel()
        self._lose_channels()
        self.channels.clear()
        if self.vhost is not None:
            self.vhost.delete_owned_by(self)
        self.server.connections.discard(self)
        self.server.closed_stats.add(self.stats)
        log.info(
            "closed AMQP connection %s (user %s)%s", self.peer, self.user, f": {exc}" if exc else ""
        )

    def _report_unanswered_close(self) -> None:
        """Rules connection.close-ok:reporting and channel.close-ok:reporting: a socket that
        closed while we waited for a close-ok is logged as an error."""
        if self.proto.closing and not self.proto.closed:
            log.warning("connection %s: socket closed before connection.close-ok", self.peer)
            return
        for channel_id in sorted(self.proto.open_channels):
            if self.proto.channel_closing(channel_id):
                log.warning(
                    "connection %s: socket closed before channel.close-ok on channel %d",
                    self.peer,
                    channel_id,
                )

    def data_received(self, data: bytes) -> None:
        self._last_recv = self.loop.time()
        try:
            try:
                evs = self.proto.receive_data(data)
            except errors.AMQPError as err:
                self._handle_events(getattr(err, "events", []))
                if self.dialect is None or self.dialect.syntax_errors_are_frame_errors:
                    err = _as_rabbitmq_reports(err)
                self._fail(err)
            else:
                self._handle_events(evs)
            for channel in self._confirming:
                channel.flush_confirms()
            self._confirming.clear()
        except Exception:
            log.exception("internal error on connection %s", self.peer)
            self._confirming.clear()
            self.close(541, "INTERNAL_ERROR")
        if self._publisher and self.server.blocked_reason:
            self.set_memory_blocked(True, self.server.blocked_reason)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()
        log.info("connection %s: write buffer full, reading paused", self.peer)

    def resume_writing(self) -> None:
        self._write_paused = False
        self._drain_pump()
        self._update_reading()
        self._redispatch()

    # -- output -------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self._pump.holding:  # behind a content still being sent
            self._pump.hold(data)
        else:
            self._out.append(data)
            self._out_bytes += len(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(self._out))
            self._last_send = self.loop.time()
        self._out.clear()
        self._out_bytes = 0
        self._drain_pump()
        if self._starved and not self._write_paused:
            self._starved = False
            self._redispatch()

    def send_method(self, channel: int, method: Method) -> None:
        response = self._response(channel, method)
        self.write(self.proto.send_method(channel, method) if response is None else response)

    def _response(self, channel: int, method: Method) -> bytes | None:
        """``method`` framed as the reply to the request being handled, if it is one."""
        if self._answering is None or self._answering[0] != channel:
            return None
        return self._answering[1](method)

    def send_content(
        self,
        channel: int,
        method: Method,
        properties: Properties,
        body: bytes,
        delivery_tag: int | None = None,
    ) -> None:
        """``delivery_tag``: a delivery's content, which a 0-9 reject may cancel."""
        response = self._response(channel, method)
        if response is not None:
            self.write(response + self.proto.content_frames(channel, method, properties, body))
            return
        data = self.proto.send_content(channel, method, properties, body)
        if delivery_tag is not None and self._cancellable(len(body)):
            self._hold_content(data, channel, delivery_tag, len(body))
        else:
            self.write(data)

    def _cancellable(self, body_size: int) -> bool:
        """Rule basic.reject:01: in 0-9 a content of several body frames goes out through the
        pump (0-9-1 clients would not understand a cancelled content)."""
        return (
            body_size > self.proto.frame_max - FRAME_OVERHEAD and self._spoken.cancellable_contents
        )

    @property
    def _spoken(self) -> Dialect:
        """The dialect, once the protocol header chose it."""
        assert self.dialect is not None
        return self.dialect

    def _hold_content(self, data: bytes, channel: int, delivery_tag: int, size: int) -> None:
        self._pump.hold(b"".join(self._out))
        self._out.clear()
        self._out_bytes = 0
        self._pump.hold_content(data, channel, delivery_tag, size, self.proto.frame_max)
        self._flush_soon()

    def _flush_soon(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    def _drain_pump(self) -> None:
        """One piece of a held content per event-loop turn (then ``_flush`` drains again):
        what the peer sent meanwhile, such as a reject of that content, is read in between."""
        transport = self.transport
        if not self._pump.holding or transport is None or transport.is_closing():
            return
        self._pump.drain(transport.write, lambda: self._write_paused)
        if self._pump.holding and not self._write_paused:
            self._flush_soon()
        self._update_reading()

    def cancel_content(self, channel: int, delivery_tag: int) -> None:
        """A 0-9 reject of a delivery whose content is still being sent: the rest of it is
        replaced by the cancel frame (an empty body frame)."""
        if self._pump.cancel(channel, delivery_tag):
            self._drain_pump()

    def send_delivery(
        self,
        channel: int,
        consumer_tag: bytes,
        delivery_tag: int,
        redelivered: bool,
        message: Message,
    ) -> None:
        # Per delivery: attribute reads only, _cancellable called for multi-frame bodies alone.
        body_size = len(message.body)
        cancellable = body_size > self.proto.frame_max - FRAME_OVERHEAD and self._cancellable(
            body_size
        )
        if self._pump.holding or cancellable:
            parts: list[bytes] = []
            deliver_frames(
                parts, channel, consumer_tag, delivery_tag, redelivered,
                message.envelope, message.header_payload, message.body, self.proto.frame_max,
            )  # fmt: skip
            data = b"".join(parts)
            if cancellable:
                self._hold_content(data, channel, delivery_tag, body_size)
            else:
                self.write(data)
            return
        self._out_bytes += deliver_frames(
            self._out,
            channel,
            consumer_tag,
            delivery_tag,
            redelivered,
            message.envelope,
            message.header_payload,
            message.body,
            self.proto.frame_max,
        )
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    @property
    def writable(self) -> bool:
        """False while output is over the high watermark (consumers then get nothing)."""
        if self._write_paused or self._closed:
            return False
        if self._out_bytes >= self.config.write_buffer_high:
            self._starved = True
            return False
        return True

    def _redispatch(self) -> None:
        for channel in list(self.channels.values()):
            channel.redispatch()

    # -- flow control -------------------------------------------------------------------------

    def published(self, size: int) -> None:
        self._publisher = True

    def confirms_pending(self, channel: ServerChannel) -> None:
        self._confirming.append(channel)

    def set_memory_blocked(self, blocked: bool, reason: str = "low on memory") -> None:
        """The broker's memory crossed its watermark: block (or unblock) a publisher."""
        if blocked == self._memory_blocked or not self._publisher or not self.opened:
            return
        self._memory_blocked = blocked
        self._spoken.publishers_blocked(self, blocked)
        if self.client_capability("connection.blocked"):
            if blocked:
                announce = self.spec.method("connection.blocked")(reason=reason)
            else:
                announce = self.spec.method("connection.unblocked")()
            self.send_method(0, self.handshake.send(announce))
        self._update_reading()
        log.info(
            "connection %s %s (memory watermark)", self.peer, "blocked" if blocked else "unblocked"
        )

    def _update_reading(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        # A 0-9 connection sending a cancellable content keeps reading: a reject may come.
        sending = self._pump.holds_content and self._pump.held_bytes < self.config.write_buffer_high
        if (self._write_paused and not sending) or self._memory_blocked:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def client_capability(self, name: str) -> bool:
        caps = self.client_properties.get("capabilities")
        return isinstance(caps, dict) and caps.get(name) is True

    # -- events -------------------------------------------------------------------------------

    def _handle_events(self, evs: list[events.Event]) -> None:
        try:
            for ev in evs:
                if self._closed:
                    return
                self._handle_event(ev)
        except errors.AMQPError as err:
            self._fail(err)

    def _handle_event(self, ev: events.Event) -> None:
        if isinstance(ev, events.ContentReceived):
            self._on_channel_method(ev.channel, ev.method, ev)
        elif isinstance(ev, events.MethodReceived):
            if ev.channel == 0:
                self._on_connection_method(ev.method)
            else:
                self._on_channel_method(ev.channel, ev.method, None)
        elif isinstance(ev, events.ContentTooLarge):
            # The protocol layer skips the rest of that body; RabbitMQ closes the channel.
            self._refuse_channel(ev.channel, ev.method, _message_too_large(ev.size, ev.limit))
        elif isinstance(ev, events.ProtocolHeaderReceived):
            self.dialect = self._dialects.of(ev.spec)
            self._handshake = Handshake("server", ev.spec)
            self._send_start()
        elif isinstance(ev, events.OtherFrameReceived):
            self._spoken.other_frame(self, ev)
        elif isinstance(ev, events.UnsupportedProtocol):
            log.info("connection %s: unsupported protocol header %r", self.peer, ev.header)
            assert self.transport is not None
            self.transport.write(ev.reply)
            self.transport.close()
            self._closed = True
        elif not isinstance(ev, events.HeartbeatReceived):
            self._spoken.other_event(self, ev)

    def handle_request(
        self, received: events.MethodReceived | events.ContentReceived, respond: Respond
    ) -> None:
        """Handle ``received`` as if it had come in a method frame, except that what is sent
        on its channel meanwhile goes through ``respond`` first: the frame it returns (the
        reply to the request, framed by the dialect) is written instead of a method frame,
        None lets the method go out as usual. The 0-10 draft's request frames."""
        previous, self._answering = self._answering, (received.channel, respond)
        try:
            self._handle_event(received)
        finally:
            self._answering = previous

    def _on_channel_method(
        self, channel_id: int, method: Method, content: events.ContentReceived | None
    ) -> None:
        # Per method (publishes too): one attribute read and an identity test, as before.
        handshake = self._handshake
        assert handshake is not None  # channel methods come after the protocol header
        if handshake.state is not _OPEN:
            handshake.check_channel_method(method)  # 504
        if self.proto.channel_closing(channel_id) and method.NAME not in _CHANNEL_CLOSING:
            return  # decoded in the same read as the method that failed the channel
        channel = self.channels.get(channel_id)
        try:
            if channel is None:
                self._open_channel(channel_id, method)
            elif content is not None:
                # Straight to the dialect's handler (basic_publish): no frame in between.
                try:
                    publish = channel.content_handlers[type(method)]
                except KeyError:
                    raise errors.CommandInvalid(
                        f"COMMAND_INVALID - {method.NAME} is not sent by clients"
                    ) from None
                publish(channel, method, content.properties, content.body)
            else:
                channel.handle(method)
        except errors.AMQPError as err:
            if err.hard:
                if not err.class_id:
                    err.with_culprit(method.CLASS_ID, method.METHOD_ID)
                raise
            self._refuse_channel(channel_id, method, err)

    def _open_channel(self, channel_id: int, method: Method) -> None:
        """A method on a channel not open yet: the dialect opens it (channel.open) or not.
        (Its own method: the factory's closure would make ``_on_channel_method``'s locals
        cells, read slower on every publish.)"""
        dialect = self._spoken
        opened = dialect.open_channel(
            self, channel_id, method, lambda: ServerChannel(self, channel_id, dialect)
        )
        if opened is not None:
            self.channels[channel_id] = opened

    def _refuse_channel(self, channel_id: int, method: Method, err: errors.AMQPError) -> None:
        """Close a channel with a soft error, naming ``method`` unless ``err`` names one."""
        if not err.class_id:
            err.with_culprit(method.CLASS_ID, method.METHOD_ID)
        log.info("connection %s channel %d error: %s", self.peer, channel_id, err)
        channel = self.channels.get(channel_id)
        if channel is not None:
            channel.teardown()
        close = self.spec.method("channel.close")(
            reply_code=err.reply_code,
            reply_text=err.reply_text,
            class_id=err.class_id,
            method_id=err.method_id,
        )
        self.send_method(channel_id, close)

    def snapshot(self) -> ConnectionSnapshot[ServerChannel]:
        """A read-only view of this connection for the management API."""
        transport = self.transport
        return ConnectionSnapshot(
            open=self.vhost is not None and not self._closed,
            blocked=self._memory_blocked,
            user=self.user,
            vhost=self.vhost.name if self.vhost is not None else None,
            version=self.proto.spec.version if self.proto.spec is not None else (0, 0, 0),
            peer=address(transport, "peername"),
            local=address(transport, "sockname"),
            ssl=transport is not None and transport.get_extra_info("ssl_object") is not None,
            channel_max=self.proto.channel_max,
            frame_max=self.proto.frame_max,
            heartbeat=self.heartbeat,
            connected_at=self.connected_at,
            client_properties=self.client_properties,
            channels=tuple(c for c in self.channels.values() if not c.closed),
            stats=self.stats,
        )

    def forget_channel(self, channel_id: int) -> None:
        self.channels.pop(channel_id, None)

    def _lose_channels(self) -> None:
        """The connection is closing or gone (connection.close either way, socket closed,
        heartbeat timeout): its dialect tears each channel down or keeps it (the 0-10
        draft's sessions detach)."""
        for channel in list(self.channels.values()):
            self._spoken.channel_lost(channel)

    def _fail(self, err: errors.AMQPError) -> None:
        log.info(
            "connection %s error: %s (class %d method %d)",
            self.peer,
            err,
            err.class_id,
            err.method_id,
        )
        self.close(err.reply_code, err.reply_text, err.class_id, err.method_id)

    def close(self, code: int, text: str, class_id: int = 0, method_id: int = 0) -> None:
        """Start the connection.close handshake (or drop the socket before negotiation)."""
        if self._closed or self.proto.closing:
            return
        handshake = self._handshake
        if handshake is None or handshake.state in (State.HEADER, State.CLOSING, State.CLOSED):
            self.abort()
            return
        self._lose_channels()
        self.send_method(0, handshake.close(code, text, class_id, method_id))
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(CLOSE_TIMEOUT, self.abort)

    def abort(self) -> None:
        self._flush()
        if self.transport is not None:
            self.transport.close()
        self._closed = True

    # -- connection class ---------------------------------------------------------------------

    def _on_connection_method(self, method: Method) -> None:
        opened = self.opened
        try:
            self.handshake.receive(method)  # out of order: 503, or 504 once open
            _CONNECTION_HANDLERS[method.NAME](self, method)
        except errors.AMQPError as err:
            # A tune-ok refused or out of order while the connection opens (not once open,
            # where RabbitMQ closes with 504 as for any other method out of order).
            tuning = method.NAME == "connection.tune-ok" and not opened
            if tuning and self._spoken.tuning_refused(self, err):
                return
            if not err.class_id:
                err.with_culprit(method.CLASS_ID, method.METHOD_ID)
            self._fail(err)

    def _send_start(self) -> None:
        dialect = self._spoken
        start = self.handshake.start(
            dialect.start_version(),
            dialect.server_properties(
                {
                    "product": "amqp-spark broker",
                    "version": __version__,
                    "platform": f"Python {platform.python_version()}",
                    "copyright": "amqp-spark contributors",
                    "information": "https://www.rabbitmq.com/amqp-0-9-1-reference.html",
                    "cluster_name": "amqp-spark",
                    "capabilities": dict(_CAPABILITIES),
                }
            ),
            " ".join(offered_mechanisms(self._peer_common_name)).encode(),
            b"en_US",
        )
        self.send_method(0, start)

    def _start_ok(self, m: ConnectionStartOk) -> None:
        self.client_properties = m.client_properties or {}
        user, reason = self._login(m.mechanism, m.response)
        if user is None:
            self._refuse_login(m.mechanism, reason)
            return
        self.user = user.name
        cfg = self.config
        self.send_method(0, self.handshake.tune(cfg.channel_max, cfg.frame_max, cfg.heartbeat))

    def _login(self, mechanism: str, response: bytes) -> tuple[User | None, str]:
        """The user a start-ok authenticates, or None and why not (for the log only)."""
        if mechanism == EXTERNAL:
            name = self._peer_common_name
            if name is None:
                return None, "EXTERNAL without a verified client certificate"
            user = self.config.users.get(name)
            if user is None:
                return None, f"no user {name!r} for the client certificate"
        else:
            credentials = parse_response(mechanism, response)
            if credentials is None:
                return None, "malformed response or unsupported mechanism"
            user = self.config.users.get(credentials[0])
            if user is None or not user.authenticate(credentials[1]):
                return None, f"wrong user name or password for {credentials[0]!r}"
        if user.name in self.config.loopback_users and not self.peer.startswith(_LOOPBACK_PREFIXES):
            return None, f"user {user.name!r} may connect from loopback only"
        return user, ""

    def _refuse_login(self, mechanism: str, reason: str) -> None:
        """Log the failure, stop reading, and close with 403 after ``auth_failure_delay``
        (a connection.close to clients that announced authentication_failure_close, else
        the socket), which slows password guessing down."""
        delay = self.config.auth_failure_delay
        log.warning(
            "connection %s: login refused (mechanism %s): %s; closing in %.1fs",
            self.peer,
            mechanism,
            reason,
            delay,
        )
        self.handshake.refuse_login()
        assert self.transport is not None
        self.transport.pause_reading()
        if self._timer is not None:
            self._timer.cancel()
        text = (
            f"ACCESS_REFUSED - Login was refused using authentication mechanism {mechanism}. "
            "For details see the broker logfile."
        )
        self._timer = self.loop.call_later(delay, self._close_refused_login, text)

    def _close_refused_login(self, text: str) -> None:
        self._timer = None
        if not self.client_capability("authentication_failure_close"):
            self.abort()
            return
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.resume_reading()
        self._fail(errors.AccessRefused(text).with_culprit(10, 11))  # connection.start-ok

    def _tune_ok(self, m: ConnectionTuneOk) -> None:
        if m.channel_max == 0 and self._spoken.refuses_unlimited_channels:
            raise errors.NotAllowed(
                "NOT_ALLOWED - negotiated channel_max = 0 (no limit) is higher than the "
                f"maximum allowed value ({self.config.channel_max})"
            )
        tuning = self.handshake.accept_tuning(m)
        self.proto.channel_max = tuning.channel_max
        self.proto.frame_max = tuning.frame_max

    def _open(self, m: ConnectionOpen) -> None:
        name = m.virtual_host
        vhost = self.server.vhosts.get(name)
        user = self.config.users[self.user or ""]
        if vhost is None:
            raise errors.NotAllowed(f"NOT_ALLOWED - vhost {name} not found")
        vhost.check_connection_limit(user.name, self.server.connections)
        if name not in user.permissions:
            raise errors.NotAllowed(
                f"NOT_ALLOWED - access to vhost '{name}' refused for user '{user.name}'"
            )
        limit = self.config.connection_limit_of(user)
        if limit and self._open_connections_of(user) >= limit:
            log.warning("connection %s: user %r is at its connection limit", self.peer, user.name)
            raise errors.NotAllowed(
                f"NOT_ALLOWED - Connection refused for user '{user.name}'. "
                f"User connection limit ({limit}) is reached"
            )
        if self._spoken.redirected(self, m):
            return
        self.vhost = vhost
        self.access = Access(user, vhost, self.config)
        open_ok = self.handshake.open_ok()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.heartbeat:
            self._timer = self.loop.call_later(self.heartbeat / 2, self._heartbeat_tick)
        self.send_method(0, open_ok)
        log.info("connection %s: user %r opened vhost %r", self.peer, self.user, name)

    def _open_connections_of(self, user: User) -> int:
        return sum(1 for c in self.server.connections if c.user == user.name and c.opened)

    def _close(self, m: ConnectionClose) -> None:
        """close-ok, then read and discard until the client closes its end (after_close):
        nothing it sent after its close is handled (``_closed`` stops the events)."""
        log.info("connection %s: client closed it (%d %s)", self.peer, m.reply_code, m.reply_text)
        self._lose_channels()
        if self.vhost is not None:
            self.vhost.delete_owned_by(self)  # at the close, as RabbitMQ deletes them
        self.send_method(0, self.handshake.close_ok())
        self._flush()
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        heartbeat, frame_max = self.heartbeat, self.proto.frame_max
        # What the protocol layer holds of a frame not all read yet: the reading goes on
        # from there (it read the rest of this read's frames, which go unhandled).
        unread = bytes(self.proto._buffer)
        discard_until_closed(self, transport, self.loop, heartbeat, frame_max, unread)

    def _close_ok(self, m: ConnectionCloseOk) -> None:
        self.abort()

    def _update_secret(self, m: ConnectionUpdateSecret) -> None:
        reply = self.spec.method("connection.update-secret-ok")()
        self.send_method(0, self.handshake.send(reply))

    # -- timers -------------------------------------------------------------------------------

    def _handshake_timeout(self) -> None:
        log.info("connection %s: handshake timed out", self.peer)
        self.abort()

    def _heartbeat_tick(self) -> None:
        now = self.loop.time()
        interval = self.heartbeat
        reading = not (self._write_paused or self._memory_blocked)
        if reading and now - self._last_recv > 2 * interval:
            log.info(
                "connection %s: missed heartbeats from client, timeout: %ds", self.peer, interval
            )
            self.abort()
            return
        if now - self._last_send >= interval / 2:
            self.write(self.proto.send_heartbeat())
        self._timer = self.loop.call_later(interval / 2, self._heartbeat_tick)


def _message_too_large(size: int, limit: int) -> errors.AMQPError:
    return errors.PreconditionFailed(
        f"PRECONDITION_FAILED - message size {size} is larger than configured max size {limit}"
    )


def _as_rabbitmq_reports(err: errors.AMQPError) -> errors.AMQPError:
    """RabbitMQ reports method arguments it cannot decode as 501 FRAME_ERROR, not 502."""
    if err.reply_code != 502:
        return err
    frame_error = errors.FrameError(f"FRAME_ERROR - cannot decode: {err.reply_text}")
    return frame_error.with_culprit(err.class_id, err.method_id)


_CONNECTION_HANDLERS: dict[str, Callable[[AMQPConnection, Any], None]] = {
    "connection.start-ok": AMQPConnection._start_ok,
    "connection.tune-ok": AMQPConnection._tune_ok,
    "connection.open": AMQPConnection._open,
    "connection.close": AMQPConnection._close,
    "connection.close-ok": AMQPConnection._close_ok,
    "connection.update-secret": AMQPConnection._update_secret,
}
