"""AMQP 0-9 (and 0-8) on the server: the dialect ``Spec09Dialect``, with the classes and
methods 0-9-1 dropped.

A channel of a connection that negotiated 0-9 or 0-8 keeps a ``Spec09State`` (its
``dialect_state``) and dispatches through the dialect's handlers: the core's handlers,
wrapped to check access tickets and 0-9's stricter rules, plus the access, file, stream,
tx, dtx, tunnel and message classes; its contents through ``content_handlers``. A 0-9-1
channel never touches this package.
"""

from __future__ import annotations

from typing import Any

from amqp_protocol import Method, Properties, Spec, events
from amqp_protocol.generated.any_version import (
    BasicProperties,
    BasicPublish,
    BasicQos,
    BasicRecover,
    BasicRecoverAsync,
    BasicReject,
    ConnectionOpen,
    TxCommit,
    TxRollback,
)

from ...model.message import Message
from .. import prefetch_size
from ..abc import Channel, Connection
from ..core_handlers import CORE_HANDLERS
from ..dialect import ChannelHandler, ContentHandler, Dialect
from . import (
    access,
    channel_extras,
    connection_class,
    declarations,
    dtx,
    file,
    message,
    publishing,
    rejects,
    stream_class,
    tunnel,
)
from .consumers import named_queue
from .lanes import register_contents
from .state import Spec09State, state_of

#: Methods whose queue field, empty on a channel that declared no queue, is a 530.
_NAMES_A_QUEUE = ("queue.purge", "queue.delete", "basic.get", "basic.consume")


def _checked(name: str, handler: ChannelHandler) -> ChannelHandler:
    def run(channel: Channel, m: Method) -> None:
        access.check(channel, m)
        if name in _NAMES_A_QUEUE:
            named_queue(channel, getattr(m, "queue", ""))  # each of them has a queue field
        handler(channel, m)

    return run


def _recover(core: ChannelHandler) -> ChannelHandler:
    """basic.recover: refused in a transaction; 0-9 has no recover-ok to send."""

    def run(channel: Channel, m: BasicRecover | BasicRecoverAsync) -> None:
        channel_extras.require_not_transacted(channel)
        if channel.conn.spec.has_method("basic.recover-ok"):
            core(channel, m)
        else:
            channel_extras.requeue_unacked(channel)

    return run


def _basic_qos(channel: Channel, m: BasicQos) -> None:
    """basic.qos with a prefetch-size, which 0-9-1 (RabbitMQ) refuses: see
    ``within_prefetch_size``."""
    state_of(channel).prefetch_size = m.prefetch_size
    channel.qos(m.prefetch_count, m.global_)


def within_prefetch_size(channel: Channel) -> bool:
    """Rule basic.qos.prefetch-size:01 (``prefetch_size``)."""
    return prefetch_size.within_prefetch_size(channel, state_of(channel).prefetch_size)


def _tx_commit(core: ChannelHandler) -> ChannelHandler:
    """Also routes the 0-9 classes' contents; requeues of rejects go elsewhere (rejects)."""

    def run(channel: Channel, m: TxCommit) -> None:
        channel.require_tx()
        publishing.commit(channel, state_of(channel).tx_publishes)  # synced before commit-ok
        requeued = channel.take_tx_requeues()
        core(channel, m)
        rejects.requeue_elsewhere(channel, requeued)

    return run


def _tx_rollback(core: ChannelHandler) -> ChannelHandler:
    def run(channel: Channel, m: TxRollback) -> None:
        channel.require_tx()
        state_of(channel).tx_publishes.clear()
        core(channel, m)

    return run


def _basic_reject(channel: Channel, m: BasicReject) -> None:
    rejects.reject(channel, m.delivery_tag, m.requeue)


def _channel_handlers() -> dict[str, ChannelHandler]:
    """The dispatch table of a 0-9 channel, built on the core's."""
    table = dict(CORE_HANDLERS)
    table["basic.recover"] = _recover(table["basic.recover"])
    table["basic.qos"] = _basic_qos
    table["tx.commit"] = _tx_commit(table["tx.commit"])
    table["tx.rollback"] = _tx_rollback(table["tx.rollback"])
    table["basic.reject"] = _basic_reject
    for name, wrap in declarations.WRAPPERS.items():
        table[name] = wrap(table[name])
    for module in (access, file, stream_class, dtx, message, channel_extras):
        table.update(module.HANDLERS)
    return {name: _checked(name, handler) for name, handler in table.items()}


def _basic_publish(
    channel: Channel, m: BasicPublish, properties: BasicProperties, body: bytes
) -> None:
    """basic.publish, whose immediate flag 0-9 honours (see publishing)."""
    if m.immediate:
        channel.conn.access.check(m)
        exchange = channel.vhost.exchange(m.exchange)
        headers = properties.headers
        if not publishing.consumer_ready(channel, exchange, m.routing_key, headers, "basic"):
            message = Message(m.exchange, m.routing_key, properties, body)
            publishing.send_return(channel, message, "basic", 313, "NO_CONSUMERS")
            return
    channel.basic_publish(m, properties, body)  # immediate, a consumer is ready: as usual


def _content_checked(handler: ContentHandler) -> ContentHandler:
    def run(channel: Channel, m: Method, properties: Properties, body: bytes) -> None:
        access.check(channel, m)
        handler(channel, m, properties, body)

    return run


#: The content-bearing methods clients send in the file, stream and tunnel classes (the
#: 0-10 draft's dialect uses them too).
CLASS_CONTENT_HANDLERS: dict[str, ContentHandler] = {
    "file.stage": file.stage,
    "stream.publish": stream_class.stream_publish,
    "tunnel.request": tunnel.tunnel_request,
}
_CONTENT_HANDLERS: dict[str, ContentHandler] = {
    "basic.publish": _basic_publish,
    **CLASS_CONTENT_HANDLERS,
}


def close_classes(channel: Channel) -> None:
    """The channel is closing: its tickets lapse, an interrupted file stage is kept for a
    resume, parked rejects go back to their queues, the stream pacing stops. The 0-9 and
    0-8 dialects' ``channel_closing``, and the 0-10 draft's for the classes it takes from
    0-9."""
    access.release(channel)
    file.interrupted(channel, channel.conn.proto.partial_body(channel.id))
    rejects.release_parked(channel)
    state = state_of(channel)
    if state.rate_timer is not None:
        state.rate_timer.cancel()


class Spec09Dialect(Dialect):
    """AMQP 0-9, or 0-8 (``spec``): the same classes, rules and policies."""

    cancellable_contents = True  # rule basic.reject:01 (see ``AMQPConnection.send_content``)
    honours_immediate = True  # see publishing
    syntax_errors_are_frame_errors = True  # as the broker always reported them in 0-9 and 0-8

    def __init__(self, spec: Spec) -> None:
        content = {name: _content_checked(h) for name, h in _CONTENT_HANDLERS.items()}
        super().__init__(spec, _channel_handlers(), content)
        self.delivery_limit = within_prefetch_size

    def channel_state(self) -> Spec09State:
        return Spec09State()

    def register_contents(self) -> None:
        register_contents()

    def channel_closing(self, channel: Channel) -> None:
        close_classes(channel)

    def start_version(self) -> tuple[int, int]:
        return connection_class.start_version(self.spec)

    def server_properties(self, properties: dict[str, Any]) -> dict[str, Any]:
        return connection_class.server_properties(properties)

    def redirected(self, conn: Connection, m: ConnectionOpen) -> bool:
        return connection_class.redirected(conn, m)

    def publishers_blocked(self, conn: Connection, blocked: bool) -> None:
        connection_class.flow_publishers(conn, not blocked)

    def other_frame(self, conn: Connection, ev: events.OtherFrameReceived) -> None:
        connection_class.other_frame(conn, ev)
