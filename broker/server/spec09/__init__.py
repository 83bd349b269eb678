"""AMQP 0-9 (and 0-8) on the server: the classes and methods 0-9-1 dropped.

A channel of a connection that negotiated 0-9 or 0-8 gets a ``Spec09State`` (its
``extension``) and dispatches through ``handlers(core)``: the 0-9-1 handlers, wrapped to
check access tickets and 0-9's stricter rules, plus the access, file, stream, tx, dtx,
tunnel and message classes. Content-bearing methods go through ``content``. A 0-9-1 channel
never touches this package.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from amqp_protocol import Method, Properties, errors
from amqp_protocol.generated.any_version import (
    BasicProperties,
    BasicPublish,
    BasicQos,
    BasicRecover,
    BasicRecoverAsync,
    BasicReject,
    TxCommit,
    TxRollback,
)

from ...model.message import Message
from . import (
    access,
    channel_extras,
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
from .lane_queue import kept
from .state import Spec09State, state_of

if TYPE_CHECKING:
    from ..channel import ServerChannel

Handler = Callable[["ServerChannel", Any], None]
ContentHandler = Callable[["ServerChannel", Any, Any, bytes], None]

#: Methods whose queue field, empty on a channel that declared no queue, is a 530.
_NAMES_A_QUEUE = ("queue.purge", "queue.delete", "basic.get", "basic.consume")

_CONTENT: dict[str, ContentHandler] = {
    "file.stage": file.stage,
    "stream.publish": stream_class.stream_publish,
    "tunnel.request": tunnel.tunnel_request,
}


def attach(channel: ServerChannel) -> Spec09State | None:
    """The 0-9 state of a new channel; None when the connection speaks 0-9-1."""
    return Spec09State() if channel.conn.spec.version < (0, 9, 1) else None


def _checked(name: str, handler: Handler) -> Handler:
    def run(channel: ServerChannel, m: Method) -> None:
        access.check_ticket(channel, m)
        access.check_permissions(channel, m)
        if name in _NAMES_A_QUEUE:
            named_queue(channel, getattr(m, "queue", ""))  # each of them has a queue field
        handler(channel, m)

    return run


def _recover(core: Handler) -> Handler:
    """basic.recover: refused in a transaction; 0-9 has no recover-ok to send."""

    def run(channel: ServerChannel, m: BasicRecover | BasicRecoverAsync) -> None:
        channel_extras.require_not_transacted(channel)
        if channel.conn.spec.has_method("basic.recover-ok"):
            core(channel, m)
        else:
            channel_extras.requeue_unacked(channel)

    return run


def _basic_qos(core: Handler) -> Handler:
    """basic.qos with a prefetch-size, which 0-9-1 (RabbitMQ) refuses: see
    ``within_prefetch_size``."""

    def run(channel: ServerChannel, m: BasicQos) -> None:
        state_of(channel).prefetch_size = m.prefetch_size
        m.prefetch_size = 0
        core(channel, m)

    return run


def within_prefetch_size(channel: ServerChannel) -> bool:
    """Rule basic.qos.prefetch-size:01: the prefetch size never holds back a message when
    nothing is unacknowledged; otherwise more go only while the unacknowledged octets stay
    under it."""
    size = state_of(channel).prefetch_size
    if not size or not channel.unacked:
        return True
    return sum(len(entry.message.body) for _, _, entry in channel.unacked.values()) < size


def _tx_commit(core: Handler) -> Handler:
    """Also routes the 0-9 classes' contents; requeues of rejects go elsewhere (rejects)."""

    def run(channel: ServerChannel, m: TxCommit) -> None:
        channel._require_tx()
        journaled = any(kept(message) for _, message, _ in state_of(channel).tx_publishes)
        publishing.commit(channel)
        if journaled:
            channel.vhost.store.sync()  # commit-ok once the lanes' journal records are on disk
        settles = channel._tx_settles
        requeued = [item for action, _, item in settles if action == "requeue"]
        channel._tx_settles = [s for s in settles if s[0] != "requeue"]
        core(channel, m)
        rejects.requeue_elsewhere(channel, requeued)

    return run


def _tx_rollback(core: Handler) -> Handler:
    def run(channel: ServerChannel, m: TxRollback) -> None:
        channel._require_tx()
        state_of(channel).tx_publishes.clear()
        core(channel, m)

    return run


def _basic_reject(channel: ServerChannel, m: BasicReject) -> None:
    rejects.reject(channel, m.delivery_tag, m.requeue)


@functools.cache
def _table(core_items: tuple[tuple[str, Handler], ...]) -> dict[str, Handler]:
    table = dict(core_items)
    table["basic.recover"] = _recover(table["basic.recover"])
    table["basic.qos"] = _basic_qos(table["basic.qos"])
    table["tx.commit"] = _tx_commit(table["tx.commit"])
    table["tx.rollback"] = _tx_rollback(table["tx.rollback"])
    table["basic.reject"] = _basic_reject
    for name, wrap in declarations.WRAPPERS.items():
        table[name] = wrap(table[name])
    for module in (access, file, stream_class, dtx, message, channel_extras):
        table.update(module.HANDLERS)
    return {name: _checked(name, handler) for name, handler in table.items()}


def handlers(core: dict[str, Handler]) -> dict[str, Handler]:
    """The dispatch table of a 0-9 channel, built on the 0-9-1 table ``core``."""
    return _table(tuple(core.items()))


def content(channel: ServerChannel, m: Method, properties: Properties, body: bytes) -> None:
    """A content-bearing method from the client, on a 0-9 channel."""
    access.check_ticket(channel, m)
    access.check_permissions(channel, m)
    if isinstance(m, BasicPublish):
        # The protocol layer pairs a content header with its method's class: basic.
        properties = cast(BasicProperties, properties)
        if m.immediate:
            channel.conn.access.check(m)
            exchange = channel.vhost.exchange(m.exchange)
            headers = properties.headers
            if not publishing.consumer_ready(channel, exchange, m.routing_key, headers, "basic"):
                message = Message(m.exchange, m.routing_key, properties, body)
                publishing.send_return(channel, message, "basic", 313, "NO_CONSUMERS")
                return
            m.immediate = False  # a consumer is ready: published as usual
        channel.basic_publish(m, properties, body)
        return
    handler = _CONTENT.get(m.NAME)
    if handler is None:
        raise errors.CommandInvalid(f"COMMAND_INVALID - {m.NAME} is not sent by clients")
    handler(channel, m, properties, body)


def teardown(channel: ServerChannel) -> None:
    """The channel closed: tickets lapse, an interrupted file stage is kept for a resume."""
    access.release(channel)
    file.interrupted(channel, channel.conn.proto.partial_body(channel.id))
    rejects.release_parked(channel)
    state = state_of(channel)
    if state.rate_timer is not None:
        state.rate_timer.cancel()
