"""One client connection: an asyncio Protocol feeding the sans-IO protocol layer.

Its output, and when it stops reading, are its ``ConnectionOutput``'s
(``connection_output.py``): output is collected per event-loop turn and written at once, and
reading stops while the output or the broker's memory is over its watermark.

Hostile input is bounded too: the handshake must finish within ``handshake_timeout``, a
refused login is closed after ``auth_failure_delay``, the broker holds at most
``connection_limit`` connections (descriptors.py) and a user ``connection_limit_of(user)``,
and a message body declared larger than ``max_message_size`` is discarded as it arrives and
refused (406) once it is all in, as RabbitMQ 4 does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from amqp_protocol import Connection, Method, Properties, Spec, errors, events
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
from ..auth import offered_mechanisms
from ..model.stats import MessageStats
from ..model.vhost import VirtualHost
from .abc import Respond, Server
from .admission import admit, authenticate, server_properties
from .after_close import discard_until_closed, report_unanswered_close
from .channel import ServerChannel
from .connection_output import ConnectionOutput
from .connection_view import ConnectionSnapshot, snapshot_of
from .dialect import Dialect, Dialects

log = logging.getLogger("broker.connection")

#: Seconds a peer has to answer our connection.close.
CLOSE_TIMEOUT = 3.0


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
        #: what it sends, and its flow control
        self.output = ConnectionOutput(
            self.loop, self.proto, server.config.write_buffer_high, self._redispatch
        )
        self._publisher = False
        self._confirming: list[ServerChannel] = []
        #: the connection class's state machine (set with the dialect)
        self._handshake: Handshake | None = None
        self._last_recv = self.loop.time()
        self._timer: asyncio.TimerHandle | None = None
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
        return self.output.closed

    @property
    def memory_blocked(self) -> bool:
        """Reading is stopped: the broker is over its memory watermark and this connection
        publishes."""
        return self.output.memory_blocked

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = self.output.transport = transport
        transport.set_write_buffer_limits(high=self.config.write_buffer_high)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        limit = self.server.connection_limit
        if len(self.server.connections) >= limit:
            self.server.refusals.refused(f"connection limit ({limit}) reached")
            self.output.closed = True
            transport.abort()
            return
        self.server.refusals.accepted()
        self.server.connections.add(self)
        self._timer = self.loop.call_later(self.config.handshake_timeout, self._handshake_timeout)
        log.info("accepting AMQP connection %s", self.peer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.output.closed = True
        report_unanswered_close(self.proto, self.peer)
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
        self.output.pause_writing()
        log.info("connection %s: write buffer full, reading paused", self.peer)

    def resume_writing(self) -> None:
        self.output.resume_writing()

    # -- output -------------------------------------------------------------------------------

    def send_method(self, channel: int, method: Method) -> None:
        response = self._response(channel, method)
        self.output.write(self.proto.send_method(channel, method) if response is None else response)

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
        output = self.output
        if response is not None:
            output.write(response + self.proto.content_frames(channel, method, properties, body))
            return
        data = self.proto.send_content(channel, method, properties, body)
        if delivery_tag is not None and output.cancellable(len(body)):
            output.hold_content(data, channel, delivery_tag, len(body))
        else:
            output.write(data)

    @property
    def _spoken(self) -> Dialect:
        """The dialect, once the protocol header chose it."""
        assert self.dialect is not None
        return self.dialect

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
        if blocked == self.output.memory_blocked or not self._publisher or not self.opened:
            return
        self.output.memory_blocked = blocked
        self._spoken.publishers_blocked(self, blocked)
        if self.client_capability("connection.blocked"):
            if blocked:
                announce = self.spec.method("connection.blocked")(reason=reason)
            else:
                announce = self.spec.method("connection.unblocked")()
            self.send_method(0, self.handshake.send(announce))
        self.output.update_reading()
        log.info(
            "connection %s %s (memory watermark)", self.peer, "blocked" if blocked else "unblocked"
        )

    def client_capability(self, name: str) -> bool:
        caps = self.client_properties.get("capabilities")
        return isinstance(caps, dict) and caps.get(name) is True

    # -- events -------------------------------------------------------------------------------

    def _handle_events(self, evs: list[events.Event]) -> None:
        try:
            for ev in evs:
                if self.output.closed:
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
            self.output.cancellable_contents = self.dialect.cancellable_contents
            self._handshake = Handshake("server", ev.spec)
            self._send_start()
        elif isinstance(ev, events.OtherFrameReceived):
            self._spoken.other_frame(self, ev)
        elif isinstance(ev, events.UnsupportedProtocol):
            log.info("connection %s: unsupported protocol header %r", self.peer, ev.header)
            assert self.transport is not None
            self.transport.write(ev.reply)
            self.transport.close()
            self.output.closed = True
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
        return snapshot_of(self)

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
        if self.output.closed or self.proto.closing:
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
        self.output.flush()
        if self.transport is not None:
            self.transport.close()
        self.output.closed = True

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
            dialect.server_properties(server_properties()),
            " ".join(offered_mechanisms(self._peer_common_name)).encode(),
            b"en_US",
        )
        self.send_method(0, start)

    def _start_ok(self, m: ConnectionStartOk) -> None:
        self.client_properties = m.client_properties or {}
        user, reason = authenticate(
            self.config, m.mechanism, m.response, self.peer, self._peer_common_name
        )
        if user is None:
            self._refuse_login(m.mechanism, reason)
            return
        self.user = user.name
        cfg = self.config
        self.send_method(0, self.handshake.tune(cfg.channel_max, cfg.frame_max, cfg.heartbeat))

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
        user = self.config.users[self.user or ""]
        vhost = admit(self.server, user, name, self.peer)
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

    def _close(self, m: ConnectionClose) -> None:
        """close-ok, then read and discard until the client closes its end (after_close):
        nothing it sent after its close is handled (``closed`` stops the events)."""
        log.info("connection %s: client closed it (%d %s)", self.peer, m.reply_code, m.reply_text)
        self._lose_channels()
        if self.vhost is not None:
            self.vhost.delete_owned_by(self)  # at the close, as RabbitMQ deletes them
        self.send_method(0, self.handshake.close_ok())
        self.output.flush()
        self.output.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        heartbeat, frame_max = self.heartbeat, self.proto.frame_max
        # What the protocol layer holds of a frame not all read yet: the reading goes on
        # from there (it read the rest of this read's frames, which go unhandled).
        unread = self.proto.unparsed()
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
        reading = not (self.output.write_paused or self.output.memory_blocked)
        if reading and now - self._last_recv > 2 * interval:
            log.info(
                "connection %s: missed heartbeats from client, timeout: %ds", self.peer, interval
            )
            self.abort()
            return
        if now - self.output.last_send >= interval / 2:
            self.output.write(self.proto.send_heartbeat())
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
