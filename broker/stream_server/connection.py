"""One stream-protocol connection: the handshake (peer properties, SASL, tune, open), then
the commands, answered with RabbitMQ's response codes (``rabbit_stream_reader``).

A frame that does not parse, an unknown command, a frame above the negotiated size or a
command out of turn closes this connection alone: a ``Close`` naming the problem with the
protocol's code, then the socket.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from amqp_protocol import errors

from ..access import Access
from ..config import User
from ..model.vhost import VirtualHost
from ..server.admission import LOOPBACK_ONLY, admit, authenticate, server_properties
from ..streams.amqp10_records import raw_record
from ..streams.chunk_filter import consumer_filter
from ..streams.offset_spec import OffsetSpec
from ..streams.queue import StreamQueue
from . import commands
from .subscriptions import Subscription
from .wire import COMMAND_HEAD, FRAME_SIZE, RESPONSE, Code, FrameError, Key, Reader, Writer

if TYPE_CHECKING:
    from .listener import StreamListener

log = logging.getLogger("broker.stream")

#: The mechanisms offered (EXTERNAL too with a verified client certificate).
MECHANISMS = ("PLAIN", "AMQPLAIN")
#: Frames a client may send before it is authenticated, and their size limit there.
_PRE_OPEN = {Key.PEER_PROPERTIES, Key.SASL_HANDSHAKE, Key.SASL_AUTHENTICATE, Key.TUNE, Key.OPEN}
_PRE_OPEN_FRAME_MAX = 1 << 20
_OFFSET_TYPES = {1: "first", 2: "last", 3: "next", 4: "offset", 5: "timestamp"}
#: The commands and versions this server speaks (ExchangeCommandVersions).
SERVER_VERSIONS = {Key.PUBLISH: 2, Key.DELIVER: 2}


class Publisher:
    __slots__ = ("queue", "reference")

    def __init__(self, queue: StreamQueue, reference: str) -> None:
        self.queue = queue
        self.reference = reference


class StreamConnection(asyncio.Protocol):
    def __init__(self, listener: StreamListener) -> None:
        self.listener = listener
        self.config = listener.config
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self._buffer = bytearray()
        self._user: User | None = None
        self._mechanism = ""
        self.vhost: VirtualHost | None = None
        self._access: Access | None = None
        self.frame_max = _PRE_OPEN_FRAME_MAX
        self.heartbeat = 0
        self._closing = False
        self._writable = True
        self.publishers: dict[int, Publisher] = {}
        self.subscriptions: dict[int, Subscription] = {}
        self._deliver_version = 1
        self._last_read = 0.0
        self._heartbeat_timer: asyncio.TimerHandle | None = None
        #: the vhost's name in open.ok and in the management's view
        self.user = ""

    # -- asyncio ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.config.write_buffer_high)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._last_read = self.listener.loop.time()
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
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._writable = True
        if self.transport is not None and not self._closing:
            self.transport.resume_reading()
        self._pump_all()

    def data_received(self, data: bytes) -> None:
        self._last_read = self.listener.loop.time()
        buffer = self._buffer
        buffer += data
        pos = 0
        try:
            while not self._closing and len(buffer) - pos >= FRAME_SIZE.size:
                (size,) = FRAME_SIZE.unpack_from(buffer, pos)
                limit = self.frame_max or (1 << 32)
                if size > limit:
                    raise FrameError(
                        f"a frame of {size} bytes: the limit is {limit}", Code.FRAME_TOO_LARGE
                    )
                end = pos + FRAME_SIZE.size + size
                if len(buffer) < end:
                    break
                self._frame(memoryview(bytes(buffer[pos + FRAME_SIZE.size : end])))
                pos = end
        except FrameError as e:
            self.fail(e.code, str(e))
        del buffer[:pos]

    # -- frames -------------------------------------------------------------------------------

    def send(self, frame: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)

    def fail(self, code: Code, reason: str) -> None:
        """Close this connection for ``reason``: a Close with ``code``, then the socket."""
        if self._closing:
            return
        log.warning("stream connection %s: closing: %s (code %d)", self.peer, reason, code)
        self.send(Writer(Key.CLOSE).u32(0).u16(code).string(reason[:255]).frame())
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def _frame(self, frame: memoryview) -> None:
        if len(frame) < COMMAND_HEAD.size:
            raise FrameError(f"a frame of {len(frame)} bytes is too short for a command")
        key, version = COMMAND_HEAD.unpack_from(frame)
        if key & RESPONSE:
            self._response(key & ~RESPONSE, frame)
            return
        try:
            command = Key(key)
        except ValueError:
            raise FrameError(f"unknown command key 0x{key:04x}") from None
        handler = _HANDLERS.get(command)
        if handler is None:
            raise FrameError(f"command {command.name} is not one a client sends")
        if self.vhost is None and command not in _PRE_OPEN:
            raise FrameError(f"{command.name} before the connection is open")
        handler(self, Reader(frame, COMMAND_HEAD.size, command.name), version)

    def _response(self, key: int, frame: memoryview) -> None:
        """A client's response: to a Close the server sent (the end); the server sends no
        other request that expects one (ConsumerUpdate: single active consumer is refused)."""
        if key == Key.CLOSE:
            self._closing = True
            if self.transport is not None:
                self.transport.close()
            return
        raise FrameError(f"an unexpected response to command 0x{key:04x}")

    # -- handshake ----------------------------------------------------------------------------

    def peer_properties(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        r.string_map()
        r.end()
        properties = {k: v for k, v in server_properties().items() if isinstance(v, str)}
        self.send(commands.ok(Key.PEER_PROPERTIES, correlation).string_map(properties).frame())

    def sasl_handshake(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        r.end()
        self.send(commands.ok(Key.SASL_HANDSHAKE, correlation).strings(self._mechanisms()).frame())

    def _mechanisms(self) -> tuple[str, ...]:
        if self.listener.peer_common_name(self) is not None:
            return ("EXTERNAL", *MECHANISMS)
        return MECHANISMS

    def sasl_authenticate(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        mechanism = r.string()
        response = bytes(r.blob())
        r.end()
        if mechanism not in self._mechanisms():
            self.send(
                commands.code(Key.SASL_AUTHENTICATE, correlation, Code.SASL_MECHANISM_NOT_SUPPORTED)
            )
            return
        user, reason = authenticate(
            self.config, mechanism, response, self.peer, self.listener.peer_common_name(self)
        )
        if user is None:
            loopback = reason.endswith(LOOPBACK_ONLY)
            code = (
                Code.SASL_AUTHENTICATION_FAILURE_LOOPBACK
                if loopback
                else Code.AUTHENTICATION_FAILURE
            )
            log.warning("stream connection %s: login refused: %s", self.peer, reason)
            self.send(commands.code(Key.SASL_AUTHENTICATE, correlation, code))
            self.fail(code, "authentication failure")
            return
        self._user = user
        self.user = user.name
        self.send(commands.code(Key.SASL_AUTHENTICATE, correlation, Code.OK))
        self.send(Writer(Key.TUNE).u32(self.listener.frame_max).u32(self.config.heartbeat).frame())

    def tune(self, r: Reader, version: int) -> None:
        """The client's answer to our Tune: the lower values win (0: no limit)."""
        frame_max, heartbeat = r.u32(), r.u32()
        r.end()
        ours = self.listener.frame_max
        self._tuned_frame_max = min(v for v in (frame_max, ours) if v) if frame_max or ours else 0
        self.heartbeat = heartbeat
        if heartbeat:
            self._schedule_heartbeat()

    def open(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        r.end()
        if self._user is None:
            raise FrameError("Open before authentication")
        try:
            vhost = admit(self.listener.server, self._user, name, self.peer)
        except errors.AMQPError as e:
            self.send(commands.code(Key.OPEN, correlation, Code.VIRTUAL_HOST_ACCESS_FAILURE))
            self.fail(Code.VIRTUAL_HOST_ACCESS_FAILURE, str(e))
            return
        self.vhost = vhost
        self._access = Access(self._user, vhost, self.config)
        self.frame_max = getattr(self, "_tuned_frame_max", self.listener.frame_max)
        host, port = self.listener.advertised(self)
        properties = {"advertised_host": host, "advertised_port": str(port)}
        self.send(commands.ok(Key.OPEN, correlation).string_map(properties).frame())

    def close(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        r.u16()
        r.string()
        r.end()
        self.send(commands.code(Key.CLOSE, correlation, Code.OK))
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def heartbeat_frame(self, r: Reader, version: int) -> None:
        r.end()

    def _schedule_heartbeat(self) -> None:
        self._heartbeat_timer = self.listener.loop.call_later(self.heartbeat, self._beat)

    def _beat(self) -> None:
        """Send a heartbeat; a peer silent for two intervals is gone."""
        if self.listener.loop.time() - self._last_read > 2 * self.heartbeat:
            self.fail(Code.INTERNAL_ERROR, "missed heartbeats from the client")
            return
        self.send(Writer(Key.HEARTBEAT).frame())
        self._schedule_heartbeat()

    def exchange_command_versions(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        for _ in range(r.count()):
            key, _minimum, maximum = r.u16(), r.u16(), r.u16()
            if key == Key.DELIVER and maximum >= 2:
                self._deliver_version = 2
        r.end()
        w = commands.ok(Key.EXCHANGE_COMMAND_VERSIONS, correlation).count(len(_HANDLERS) + 3)
        for key in (*_HANDLERS, Key.PUBLISH_CONFIRM, Key.PUBLISH_ERROR, Key.DELIVER):
            w.u16(key).u16(1).u16(SERVER_VERSIONS.get(key, 1))
        self.send(w.frame())

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

    def create(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        arguments = r.string_map()
        r.end()
        self.send(
            commands.code(Key.CREATE, correlation, commands.create_stream(self, name, arguments))
        )

    def delete(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        r.end()
        self.send(commands.code(Key.DELETE, correlation, commands.delete_stream(self, name)))

    def metadata(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        names = r.strings()
        r.end()
        host, port = self.listener.advertised(self)
        w = Writer(Key.METADATA | RESPONSE).u32(correlation)
        w.count(1).u16(0).string(host).u32(port)
        w.count(len(names))
        for name in names:
            found = self.stream(name) is not None
            w.string(name).u16(Code.OK if found else Code.STREAM_DOES_NOT_EXIST)
            w.u16(0 if found else 0xFFFF).count(0)
        self.send(w.frame())

    def stream_stats(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        r.end()
        if not self.allowed("read", name):
            self.send(commands.ok_map(Key.STREAM_STATS, correlation, Code.ACCESS_REFUSED))
            return
        queue = self.stream(name)
        if queue is None:
            self.send(commands.ok_map(Key.STREAM_STATS, correlation, Code.STREAM_DOES_NOT_EXIST))
            return
        queue.flush()
        stats = commands.stream_stats(queue)
        w = commands.ok(Key.STREAM_STATS, correlation).count(len(stats))
        for key, value in stats.items():
            w.string(key).i64(value)
        self.send(w.frame())

    def create_super_stream(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        partitions = r.strings()
        binding_keys = r.strings()
        arguments = r.string_map()
        r.end()
        code = commands.create_super_stream(self, name, partitions, binding_keys, arguments)
        self.send(commands.code(Key.CREATE_SUPER_STREAM, correlation, code))

    def delete_super_stream(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        r.end()
        code = commands.delete_super_stream(self, name)
        self.send(commands.code(Key.DELETE_SUPER_STREAM, correlation, code))

    def partitions(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        name = r.string()
        r.end()
        code, streams = commands.partitions(self, name)
        self.send(commands.ok(Key.PARTITIONS, correlation, code).strings(streams).frame())

    def route(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        routing_key = r.string()
        name = r.string()
        r.end()
        code, streams = commands.route(self, routing_key, name)
        self.send(commands.ok(Key.ROUTE, correlation, code).strings(streams).frame())

    # -- publishing ---------------------------------------------------------------------------

    def declare_publisher(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        publisher_id = r.u8()
        reference = r.string()
        name = r.string()
        r.end()
        code = Code.OK
        queue = self.stream(name)
        if (
            publisher_id in self.publishers
            or len(reference) > 256
            or any(
                p.reference and p.reference == reference and p.queue is queue
                for p in self.publishers.values()
            )
        ):
            code = Code.PRECONDITION_FAILED
        elif not self.allowed("write", name):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        else:
            self.publishers[publisher_id] = Publisher(queue, reference)
        self.send(commands.code(Key.DECLARE_PUBLISHER, correlation, code))

    def publish(self, r: Reader, version: int) -> None:
        publisher_id = r.u8()
        publisher = self.publishers.get(publisher_id)
        confirmed: list[int] = []
        refused: list[tuple[int, Code]] = []
        queue = None if publisher is None else publisher.queue
        gone = queue is None or queue.deleted
        for _ in range(r.count()):
            publishing_id = r.u64()
            filter_value = r.string() if version >= 2 else ""
            data = r.blob()
            if publisher is None or gone:
                code = (
                    Code.PUBLISHER_DOES_NOT_EXIST
                    if publisher is None
                    else Code.STREAM_DOES_NOT_EXIST
                )
                refused.append((publishing_id, code))
                continue
            assert queue is not None
            confirmed.append(publishing_id)
            reference = publisher.reference
            if reference:
                if publishing_id <= queue.tracking.publisher_sequence(reference):
                    continue  # written before: dropped, still confirmed (RabbitMQ)
                queue.tracking.written(reference, publishing_id)
            queue.append_message(raw_record(bytes(data), queue.name), filter_value)
        r.end()
        if queue is not None and not gone:
            queue.flush()
        if confirmed:
            w = Writer(Key.PUBLISH_CONFIRM).u8(publisher_id).count(len(confirmed))
            for publishing_id in confirmed:
                w.u64(publishing_id)
            self.send(w.frame())
        if refused:
            w = Writer(Key.PUBLISH_ERROR).u8(publisher_id).count(len(refused))
            for publishing_id, code in refused:
                w.u64(publishing_id).u16(code)
            self.send(w.frame())

    def query_publisher_sequence(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        reference = r.string()
        name = r.string()
        r.end()
        queue = self.stream(name)
        if queue is None:
            self.send(
                commands.ok(Key.QUERY_PUBLISHER_SEQUENCE, correlation, Code.STREAM_DOES_NOT_EXIST)
                .u64(0)
                .frame()
            )
            return
        sequence = queue.tracking.publisher_sequence(reference)
        self.send(commands.ok(Key.QUERY_PUBLISHER_SEQUENCE, correlation).u64(sequence).frame())

    def delete_publisher(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        publisher_id = r.u8()
        r.end()
        found = self.publishers.pop(publisher_id, None) is not None
        code = Code.OK if found else Code.PUBLISHER_DOES_NOT_EXIST
        self.send(commands.code(Key.DELETE_PUBLISHER, correlation, code))

    # -- consuming ----------------------------------------------------------------------------

    def subscribe(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        subscription_id = r.u8()
        name = r.string()
        offset_type = r.u16()
        kind = _OFFSET_TYPES.get(offset_type)
        if kind is None:
            raise FrameError(f"Subscribe: offset type {offset_type}: accepted 1 to 5")
        value = r.u64() if kind == "offset" else r.i64() if kind == "timestamp" else 0
        credit = r.u16()
        properties = r.string_map() if r.remaining() else {}
        r.end()
        queue = self.stream(name)
        if subscription_id in self.subscriptions:
            code = Code.SUBSCRIPTION_ID_ALREADY_EXISTS
        elif not self.allowed("read", name):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        elif properties.get("single-active-consumer") == "true":
            code = Code.PRECONDITION_FAILED  # not supported by the bundled broker
        else:
            code = Code.OK
        self.send(commands.code(Key.SUBSCRIBE, correlation, code))
        if code != Code.OK:
            return
        assert queue is not None
        queue.flush()
        cursor = queue.start_offset(OffsetSpec(kind, value))
        if kind == "offset" and queue.log.first_offset <= cursor < queue.log.next_offset:
            cursor = queue.log.chunk_start(cursor)
        subscription = Subscription(
            subscription_id,
            queue,
            cursor,
            credit,
            consumer_filter(commands.filter_arguments(properties)),
            self.listener.chunk_cache(queue),
        )
        self.subscriptions[subscription_id] = subscription
        queue.watchers.append(self._pump_all)
        subscription.pump(self._deliver, self._can_write)

    def credit(self, r: Reader, version: int) -> None:
        subscription_id = r.u8()
        credit = r.u16()
        r.end()
        subscription = self.subscriptions.get(subscription_id)
        if subscription is None:
            w = Writer(Key.CREDIT | RESPONSE).u16(Code.SUBSCRIPTION_ID_DOES_NOT_EXIST)
            self.send(w.u8(subscription_id).frame())
            return
        subscription.credit = min(subscription.credit + credit, 0xFFFF)
        subscription.pump(self._deliver, self._can_write)

    def unsubscribe(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        subscription_id = r.u8()
        r.end()
        subscription = self.subscriptions.pop(subscription_id, None)
        if subscription is not None:
            self._unwatch(subscription)
        code = Code.OK if subscription is not None else Code.SUBSCRIPTION_ID_DOES_NOT_EXIST
        self.send(commands.code(Key.UNSUBSCRIBE, correlation, code))

    def store_offset(self, r: Reader, version: int) -> None:
        reference = r.string()
        name = r.string()
        offset = r.u64()
        r.end()
        queue = self.stream(name)
        # No response: RabbitMQ ignores a store it refuses.
        if queue is not None and reference and self.allowed("read", name):
            queue.store_offset(reference, offset)

    def query_offset(self, r: Reader, version: int) -> None:
        correlation = r.u32()
        reference = r.string()
        name = r.string()
        r.end()
        queue = self.stream(name)
        offset = None if queue is None else queue.tracking.offset(reference)
        if not self.allowed("read", name):
            code = Code.ACCESS_REFUSED
        elif queue is None:
            code = Code.STREAM_DOES_NOT_EXIST
        else:
            code = Code.NO_OFFSET if offset is None else Code.OK
        self.send(commands.ok(Key.QUERY_OFFSET, correlation, code).u64(offset or 0).frame())

    def _can_write(self) -> bool:
        return self._writable and not self._closing

    def _deliver(
        self, subscription_id: int, header: memoryview, data: memoryview, committed: int
    ) -> None:
        """One Deliver frame: written as its head, the chunk header and data (no join)."""
        assert self.transport is not None
        head = Writer(Key.DELIVER, self._deliver_version).u8(subscription_id)
        if self._deliver_version >= 2:
            head.u64(committed)
        body = head.frame()[FRAME_SIZE.size :]
        size = len(body) + len(header) + len(data)
        self.transport.writelines((FRAME_SIZE.pack(size), body, header, data))

    def _pump_all(self) -> None:
        for subscription in list(self.subscriptions.values()):
            if subscription.queue.deleted:
                self.subscriptions.pop(subscription.id, None)
                self._unwatch(subscription)
                self.send(
                    Writer(Key.METADATA_UPDATE)
                    .u16(Code.STREAM_NOT_AVAILABLE)
                    .string(subscription.queue.name)
                    .frame()
                )
            else:
                subscription.pump(self._deliver, self._can_write)

    def _unwatch(self, subscription: Subscription) -> None:
        watchers = subscription.queue.watchers
        if self._pump_all in watchers:
            watchers.remove(self._pump_all)


_HANDLERS: dict[Key, Callable[[StreamConnection, Reader, int], None]] = {
    Key.PEER_PROPERTIES: StreamConnection.peer_properties,
    Key.SASL_HANDSHAKE: StreamConnection.sasl_handshake,
    Key.SASL_AUTHENTICATE: StreamConnection.sasl_authenticate,
    Key.TUNE: StreamConnection.tune,
    Key.OPEN: StreamConnection.open,
    Key.CLOSE: StreamConnection.close,
    Key.HEARTBEAT: StreamConnection.heartbeat_frame,
    Key.EXCHANGE_COMMAND_VERSIONS: StreamConnection.exchange_command_versions,
    Key.CREATE: StreamConnection.create,
    Key.DELETE: StreamConnection.delete,
    Key.METADATA: StreamConnection.metadata,
    Key.STREAM_STATS: StreamConnection.stream_stats,
    Key.CREATE_SUPER_STREAM: StreamConnection.create_super_stream,
    Key.DELETE_SUPER_STREAM: StreamConnection.delete_super_stream,
    Key.PARTITIONS: StreamConnection.partitions,
    Key.ROUTE: StreamConnection.route,
    Key.DECLARE_PUBLISHER: StreamConnection.declare_publisher,
    Key.PUBLISH: StreamConnection.publish,
    Key.QUERY_PUBLISHER_SEQUENCE: StreamConnection.query_publisher_sequence,
    Key.DELETE_PUBLISHER: StreamConnection.delete_publisher,
    Key.SUBSCRIBE: StreamConnection.subscribe,
    Key.CREDIT: StreamConnection.credit,
    Key.UNSUBSCRIBE: StreamConnection.unsubscribe,
    Key.STORE_OFFSET: StreamConnection.store_offset,
    Key.QUERY_OFFSET: StreamConnection.query_offset,
}
