"""One stream-protocol connection: the handshake (peer properties, SASL, tune, open), then
the commands, answered with RabbitMQ's response codes (``rabbit_stream_reader``).

Frames are ``amqp_protocol.stream``'s: its sans-IO ``StreamConnection`` splits and decodes
them, checks their size and the handshake's order; this class does the broker's part. A
frame that does not decode, an unknown command, a frame above the negotiated size or a
command out of turn closes this connection alone: a ``Close`` naming the problem with the
protocol's code, then the socket.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from amqp_protocol import errors
from amqp_protocol.generated import stream as cmd
from amqp_protocol.generated.stream_codes import ResponseCode as Code
from amqp_protocol.stream.chunk import SubBatchEntry
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.connection import Role
from amqp_protocol.stream.connection import StreamConnection as Protocol
from amqp_protocol.stream.errors import StreamProtocolError
from amqp_protocol.stream.frames import deliver_prefix
from amqp_protocol.stream.values import OffsetType

from ..access import Access
from ..config import User
from ..model.vhost import VirtualHost
from ..server.admission import LOOPBACK_ONLY, admit, authenticate, server_properties
from ..streams.chunk_filter import consumer_filter
from ..streams.offset_spec import OffsetSpec
from ..streams.queue import StreamQueue
from . import commands
from .subscriptions import Subscription

if TYPE_CHECKING:
    from .abc import Listener

log = logging.getLogger("broker.stream")

#: The mechanisms offered (EXTERNAL first with a verified client certificate).
MECHANISMS = ("PLAIN", "AMQPLAIN")
_OFFSET_KINDS = {
    OffsetType.FIRST: "first",
    OffsetType.LAST: "last",
    OffsetType.NEXT: "next",
    OffsetType.OFFSET: "offset",
    OffsetType.TIMESTAMP: "timestamp",
}
#: The versions of the commands this server speaks (ExchangeCommandVersions).
SERVER_VERSIONS = {cmd.Publish.KEY: 2, cmd.Deliver.KEY: 2}


class Publisher:
    __slots__ = ("queue", "reference")

    def __init__(self, queue: StreamQueue, reference: str) -> None:
        self.queue = queue
        self.reference = reference


class StreamConnection(asyncio.Protocol):
    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.config = listener.config
        self.proto = Protocol(Role.SERVER, frame_max=listener.frame_max, clock=listener.loop.time)
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self._user: User | None = None
        self.vhost: VirtualHost | None = None
        self._access: Access | None = None
        self._closing = False
        self._writable = True
        #: a resource alarm (memory, disk) is in effect: a connection with publishers is
        #: not read until it clears, as RabbitMQ blocks stream publishers
        self._alarm = listener.server.blocked_reason is not None
        self.publishers: dict[int, Publisher] = {}
        self.subscriptions: dict[int, Subscription] = {}
        self._deliver_v2 = False
        self._heartbeat_timer: asyncio.TimerHandle | None = None
        #: the authenticated user's name (logs, management)
        self.user = ""

    # -- asyncio ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.config.write_buffer_high)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.listener.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.connections.discard(self)
        if self._heartbeat_timer is not None:
            self._heartbeat_timer.cancel()
        for subscription in self.subscriptions.values():
            self._unwatch(subscription)
        self.subscriptions.clear()
        self.publishers.clear()

    def pause_writing(self) -> None:
        """The socket's buffer is full: stop delivering and stop reading (publishers wait)."""
        self._writable = False
        self._update_reading()

    def resume_writing(self) -> None:
        self._writable = True
        self._update_reading()
        self._pump_all()

    def set_alarm(self, alarm: bool) -> None:
        """A resource alarm set or cleared (``StreamListener.set_alarm``)."""
        self._alarm = alarm
        self._update_reading()

    def _update_reading(self) -> None:
        """Read the socket unless its writer is full or an alarm blocks its publishers."""
        transport = self.transport
        if transport is None or self._closing or transport.is_closing():
            return
        if self._writable and not (self._alarm and self.publishers):
            transport.resume_reading()
        else:
            transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        try:
            for command in self.proto.receive_data(data):
                if self._closing:
                    return
                handler = _HANDLERS.get(type(command))
                if handler is None:
                    raise StreamProtocolError(
                        f"{command.NAME} is not a command this server takes", Code.UNKNOWN_FRAME
                    )
                handler(self, command)
        except StreamProtocolError as e:
            self.fail(e.code, str(e))

    # -- frames -------------------------------------------------------------------------------

    def send(self, command: Command) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.proto.send(command))

    def fail(self, code: int, reason: str) -> None:
        """Close this connection for ``reason``: a Close with ``code``, then the socket."""
        if self._closing:
            return
        log.warning("stream connection %s: closing: %s (code %d)", self.peer, reason, code)
        self._closing = True
        if self.transport is not None:
            close = cmd.Close(self.proto.next_correlation_id(), code, reason[:200])
            self.transport.write(close.encode())
            self.transport.close()

    # -- handshake ----------------------------------------------------------------------------

    def peer_properties(self, c: cmd.PeerProperties) -> None:
        properties = {k: v for k, v in server_properties().items() if isinstance(v, str)}
        self.send(cmd.PeerPropertiesResponse(c.correlation_id, Code.OK, properties))

    def sasl_handshake(self, c: cmd.SaslHandshake) -> None:
        self.send(cmd.SaslHandshakeResponse(c.correlation_id, Code.OK, list(self._mechanisms())))

    def _mechanisms(self) -> tuple[str, ...]:
        if self.listener.peer_common_name(self.transport) is not None:
            return ("EXTERNAL", *MECHANISMS)
        return MECHANISMS

    def sasl_authenticate(self, c: cmd.SaslAuthenticate) -> None:
        if c.mechanism not in self._mechanisms():
            code = Code.SASL_MECHANISM_NOT_SUPPORTED
            self.send(cmd.SaslAuthenticateResponse(c.correlation_id, code))
            self.fail(code, f"SASL mechanism {c.mechanism!r} not supported")
            return
        user, reason = authenticate(
            self.config,
            c.mechanism,
            bytes(c.sasl_data or b""),
            self.peer,
            self.listener.peer_common_name(self.transport),
        )
        if user is None:
            loopback = reason.endswith(LOOPBACK_ONLY)
            code = (
                Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK
                if loopback
                else Code.AUTHENTICATION_FAILURE
            )
            log.warning("stream connection %s: login refused: %s", self.peer, reason)
            self.send(cmd.SaslAuthenticateResponse(c.correlation_id, code))
            self.fail(code, "authentication failure")
            return
        self._user = user
        self.user = user.name
        self.send(cmd.SaslAuthenticateResponse(c.correlation_id, Code.OK))
        self.send(cmd.Tune(self.listener.frame_max, self.config.heartbeat))

    def tune(self, c: cmd.Tune | cmd.TuneResponse) -> None:
        """The client's tune: the connection applied it (frame max, heartbeat)."""
        if self.proto.heartbeat:
            self._schedule_heartbeat()

    def open(self, c: cmd.Open) -> None:
        assert self._user is not None  # the handshake's order
        try:
            vhost = admit(self.listener.server, self._user, c.virtual_host, self.peer)
        except errors.AMQPError as e:
            code = Code.VIRTUAL_HOST_ACCESS_FAILURE
            self.send(cmd.OpenResponse(c.correlation_id, code))
            self.fail(code, str(e))
            return
        self.vhost = vhost
        self._access = Access(self._user, vhost, self.config)
        host, port = self.listener.advertised(self.transport)
        properties = {"advertised_host": host, "advertised_port": str(port)}
        self.send(cmd.OpenResponse(c.correlation_id, Code.OK, properties))

    def close(self, c: cmd.Close) -> None:
        if self.transport is not None:
            self.transport.write(cmd.CloseResponse(c.correlation_id, Code.OK).encode())
            self.transport.close()
        self._closing = True

    def close_response(self, c: cmd.CloseResponse) -> None:
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def heartbeat(self, c: cmd.Heartbeat) -> None:
        """Nothing to do: the connection noted that the peer is alive."""

    def _schedule_heartbeat(self) -> None:
        interval = max(self.proto.heartbeat / 2, 0.5)
        self._heartbeat_timer = self.listener.loop.call_later(interval, self._beat)

    def _beat(self) -> None:
        """Send a heartbeat when due; a peer silent for two intervals is gone."""
        if self.proto.peer_timed_out():
            self.fail(Code.INTERNAL_ERROR, "missed heartbeats from the client")
            return
        if self.proto.heartbeat_due():
            self.send(cmd.Heartbeat())
        self._schedule_heartbeat()

    def exchange_command_versions(self, c: cmd.ExchangeCommandVersions) -> None:
        self._deliver_v2 = any(v.key == cmd.Deliver.KEY and v.max_version >= 2 for v in c.commands)
        keys = sorted({k.KEY for k in _HANDLERS if not k.KEY & 0x8000} | {0x03, 0x04, 0x08})
        versions = [cmd.CommandVersion(key, 1, SERVER_VERSIONS.get(key, 1)) for key in keys]
        self.send(cmd.ExchangeCommandVersionsResponse(c.correlation_id, Code.OK, versions))

    # -- permissions and lookups --------------------------------------------------------------

    def allowed(self, kind: str, name: str) -> bool:
        assert self._access is not None
        try:
            self._access.require(kind, "queue", name)
        except errors.AMQPError:
            return False
        return True

    def stream(self, name: str) -> StreamQueue | None:
        assert self.vhost is not None
        queue = self.vhost.queues.get(name)
        return queue if isinstance(queue, StreamQueue) else None

    # -- streams ------------------------------------------------------------------------------

    def create(self, c: cmd.Create) -> None:
        code = commands.create_stream(self, c.stream, c.arguments)
        self.send(cmd.CreateResponse(c.correlation_id, code))

    def delete(self, c: cmd.Delete) -> None:
        self.send(cmd.DeleteResponse(c.correlation_id, commands.delete_stream(self, c.stream)))

    def metadata(self, c: cmd.Metadata) -> None:
        host, port = self.listener.advertised(self.transport)
        answers = []
        for name in c.streams:
            found = self.stream(name) is not None
            code = Code.OK if found else Code.STREAM_DOES_NOT_EXIST
            answers.append(cmd.StreamMetadata(name, code, 0 if found else 0xFFFF, []))
        self.send(cmd.MetadataResponse(c.correlation_id, [cmd.Broker(0, host, port)], answers))

    def stream_stats(self, c: cmd.StreamStats) -> None:
        queue = self.stream(c.stream)
        stats: dict[str, int] = {}
        if not self.allowed("read", c.stream):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        else:
            queue.flush()
            code, stats = Code.OK, commands.stream_stats(queue)
        self.send(cmd.StreamStatsResponse(c.correlation_id, code, stats))

    def create_super_stream(self, c: cmd.CreateSuperStream) -> None:
        code = commands.create_super_stream(self, c.name, c.partitions, c.binding_keys, c.arguments)
        self.send(cmd.CreateSuperStreamResponse(c.correlation_id, code))

    def delete_super_stream(self, c: cmd.DeleteSuperStream) -> None:
        code = commands.delete_super_stream(self, c.name)
        self.send(cmd.DeleteSuperStreamResponse(c.correlation_id, code))

    def partitions(self, c: cmd.Partitions) -> None:
        code, streams = commands.partitions(self, c.super_stream)
        self.send(cmd.PartitionsResponse(c.correlation_id, code, streams))

    def route(self, c: cmd.Route) -> None:
        code, streams = commands.route(self, c.routing_key, c.super_stream)
        self.send(cmd.RouteResponse(c.correlation_id, code, streams))

    # -- publishing ---------------------------------------------------------------------------

    def declare_publisher(self, c: cmd.DeclarePublisher) -> None:
        queue = self.stream(c.stream)
        reference = c.publisher_reference
        taken = any(
            p.reference and p.reference == reference and p.queue is queue
            for p in self.publishers.values()
        )
        if c.publisher_id in self.publishers or len(reference) > 256 or taken:
            code = Code.PRECONDITION_FAILED
        elif not self.allowed("write", c.stream):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        else:
            code = Code.OK
            self.publishers[c.publisher_id] = Publisher(queue, reference)
        self.send(cmd.DeclarePublisherResponse(c.correlation_id, code))
        self._update_reading()

    def publish(self, c: cmd.Publish | cmd.PublishV2) -> None:
        """Append the messages as one chunk (a publishing id a named publisher wrote before
        is dropped, as RabbitMQ drops it), then confirm them all."""
        publisher = self.publishers.get(c.publisher_id)
        if publisher is None or publisher.queue.deleted:
            code = (
                Code.PUBLISHER_DOES_NOT_EXIST if publisher is None else Code.STREAM_DOES_NOT_EXIST
            )
            refused = [cmd.PublishingError(m.publishing_id, code) for m in c.messages]
            self.send(cmd.PublishError(c.publisher_id, refused))
            return
        queue, reference = publisher.queue, publisher.reference
        tracking = queue.tracking
        confirmed: list[int] = []
        errors_: list[cmd.PublishingError] = []
        for m in c.messages:
            if isinstance(m.message, SubBatchEntry):
                # stored records are single messages: a client's sub-batches are refused
                errors_.append(cmd.PublishingError(m.publishing_id, Code.PRECONDITION_FAILED))
                continue
            confirmed.append(m.publishing_id)
            if reference:
                if m.publishing_id <= tracking.publisher_sequence(reference):
                    continue
                tracking.written(reference, m.publishing_id)
            queue.append_record(bytes(m.message), m.filter_value or "")
        queue.flush()
        if confirmed:
            self.send(cmd.PublishConfirm(c.publisher_id, confirmed))
        if errors_:
            self.send(cmd.PublishError(c.publisher_id, errors_))

    def query_publisher_sequence(self, c: cmd.QueryPublisherSequence) -> None:
        queue = self.stream(c.stream)
        if queue is None:
            response = cmd.QueryPublisherSequenceResponse(
                c.correlation_id, Code.STREAM_DOES_NOT_EXIST, 0
            )
        else:
            sequence = queue.tracking.publisher_sequence(c.publisher_reference)
            response = cmd.QueryPublisherSequenceResponse(c.correlation_id, Code.OK, sequence)
        self.send(response)

    def delete_publisher(self, c: cmd.DeletePublisher) -> None:
        found = self.publishers.pop(c.publisher_id, None) is not None
        code = Code.OK if found else Code.PUBLISHER_DOES_NOT_EXIST
        self.send(cmd.DeletePublisherResponse(c.correlation_id, code))

    # -- consuming ----------------------------------------------------------------------------

    def subscribe(self, c: cmd.Subscribe) -> None:
        spec = c.offset_specification
        kind = _OFFSET_KINDS.get(OffsetType(spec.type)) if spec.type in _OFFSET_KINDS else None
        if kind is None:
            raise StreamProtocolError(
                f"Subscribe: offset type {spec.type}: accepted 1 to 5", Code.PRECONDITION_FAILED
            )
        queue = self.stream(c.stream)
        if c.subscription_id in self.subscriptions:
            code = Code.SUBSCRIPTION_ID_ALREADY_EXISTS
        elif not self.allowed("read", c.stream):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        elif c.properties.get("single-active-consumer") == "true":
            code = Code.PRECONDITION_FAILED  # not offered by the bundled broker
        else:
            code = Code.OK
        self.send(cmd.SubscribeResponse(c.correlation_id, code))
        if queue is None or code != Code.OK:
            return
        queue.flush()
        log_ = queue.log
        cursor = queue.start_offset(OffsetSpec(kind, spec.value))
        if kind == "offset" and log_.first_offset <= cursor < log_.next_offset:
            cursor = log_.chunk_start(cursor)
        subscription = Subscription(
            c.subscription_id,
            queue,
            cursor,
            c.credit,
            consumer_filter(commands.filter_arguments(c.properties)),
        )
        self.subscriptions[c.subscription_id] = subscription
        queue.watchers.append(self._pump_all)
        subscription.pump(self._deliver, self._can_write)

    def credit(self, c: cmd.Credit) -> None:
        subscription = self.subscriptions.get(c.subscription_id)
        if subscription is None:
            self.send(cmd.CreditResponse(Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, c.subscription_id))
            return
        subscription.credit = min(subscription.credit + c.credit, 0xFFFF)
        subscription.pump(self._deliver, self._can_write)

    def unsubscribe(self, c: cmd.Unsubscribe) -> None:
        subscription = self.subscriptions.pop(c.subscription_id, None)
        if subscription is not None:
            self._unwatch(subscription)
        code = Code.OK if subscription is not None else Code.SUBSCRIPTION_ID_DOES_NOT_EXIST
        self.send(cmd.UnsubscribeResponse(c.correlation_id, code))

    def store_offset(self, c: cmd.StoreOffset) -> None:
        """No response: RabbitMQ ignores a store it refuses."""
        queue = self.stream(c.stream)
        if queue is not None and c.reference and self.allowed("read", c.stream):
            queue.store_offset(c.reference, c.offset)

    def query_offset(self, c: cmd.QueryOffset) -> None:
        queue = self.stream(c.stream)
        offset = None if queue is None else queue.tracking.offset(c.reference)
        if not self.allowed("read", c.stream):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        else:
            code = Code.NO_OFFSET if offset is None else Code.OK
        self.send(cmd.QueryOffsetResponse(c.correlation_id, code, offset or 0))

    def _can_write(self) -> bool:
        return self._writable and not self._closing

    def _deliver(
        self, subscription_id: int, header: memoryview, data: memoryview, committed: int
    ) -> None:
        """One Deliver frame, written as its prefix, the chunk's header and data (no join)."""
        assert self.transport is not None
        size = len(header) + len(data)
        prefix = deliver_prefix(subscription_id, size, committed if self._deliver_v2 else None)
        self.transport.writelines((prefix, header, data))

    def _pump_all(self) -> None:
        for subscription in list(self.subscriptions.values()):
            if subscription.queue.deleted:
                self.subscriptions.pop(subscription.id, None)
                self._unwatch(subscription)
                name = subscription.queue.name
                self.send(cmd.MetadataUpdate(Code.STREAM_NOT_AVAILABLE, name))
            else:
                subscription.pump(self._deliver, self._can_write)

    def _unwatch(self, subscription: Subscription) -> None:
        watchers = subscription.queue.watchers
        if self._pump_all in watchers:
            watchers.remove(self._pump_all)


_HANDLERS: dict[type[Command], Callable[[StreamConnection, Any], None]] = {
    cmd.PeerProperties: StreamConnection.peer_properties,
    cmd.SaslHandshake: StreamConnection.sasl_handshake,
    cmd.SaslAuthenticate: StreamConnection.sasl_authenticate,
    cmd.Tune: StreamConnection.tune,
    cmd.TuneResponse: StreamConnection.tune,
    cmd.Open: StreamConnection.open,
    cmd.Close: StreamConnection.close,
    cmd.CloseResponse: StreamConnection.close_response,
    cmd.Heartbeat: StreamConnection.heartbeat,
    cmd.ExchangeCommandVersions: StreamConnection.exchange_command_versions,
    cmd.Create: StreamConnection.create,
    cmd.Delete: StreamConnection.delete,
    cmd.Metadata: StreamConnection.metadata,
    cmd.StreamStats: StreamConnection.stream_stats,
    cmd.CreateSuperStream: StreamConnection.create_super_stream,
    cmd.DeleteSuperStream: StreamConnection.delete_super_stream,
    cmd.Partitions: StreamConnection.partitions,
    cmd.Route: StreamConnection.route,
    cmd.DeclarePublisher: StreamConnection.declare_publisher,
    cmd.Publish: StreamConnection.publish,
    cmd.PublishV2: StreamConnection.publish,
    cmd.QueryPublisherSequence: StreamConnection.query_publisher_sequence,
    cmd.DeletePublisher: StreamConnection.delete_publisher,
    cmd.Subscribe: StreamConnection.subscribe,
    cmd.Credit: StreamConnection.credit,
    cmd.Unsubscribe: StreamConnection.unsubscribe,
    cmd.StoreOffset: StreamConnection.store_offset,
    cmd.QueryOffset: StreamConnection.query_offset,
}
