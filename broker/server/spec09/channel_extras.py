"""0-9 methods of the classes 0-9-1 kept: channel.resume/ping/pong/ok, exchange.bound and
basic.recover-sync."""

from __future__ import annotations

from typing import TYPE_CHECKING

from amqp_protocol import errors
from amqp_protocol.generated.any_version import (
    BasicRecoverSync,
    ChannelOk,
    ChannelPing,
    ChannelPong,
    ChannelResume,
    ExchangeBound,
)

if TYPE_CHECKING:
    from ..abc import Channel


def _channel_ok(ch: Channel, m: ChannelResume | ChannelPing | ChannelPong) -> None:
    """channel.resume (the channel is already open here: nothing to resume), ping, pong."""
    ch.send(ch.conn.spec.method("channel.ok")())


def _channel_ok_received(ch: Channel, m: ChannelOk) -> None:
    """channel.ok "signals normal completion of a method": the answer to a resume, ping or
    pong. The server sends none of those, so a client's channel.ok completes nothing, and it
    asks for no reply (it has no response): it is accepted and changes nothing."""


def _exchange_bound(ch: Channel, m: ExchangeBound) -> None:
    """Is ``queue`` (any queue when empty) bound to ``exchange`` for ``routing-key``?"""
    vhost = ch.vhost
    code, text = 0, "OK"
    if m.exchange not in vhost.exchanges:
        code, text = 404, "EXCHANGE_NOT_FOUND"
    elif m.queue and m.queue not in vhost.queues:
        code, text = 404, "QUEUE_NOT_FOUND"
    else:
        routed = vhost.route(vhost.exchanges[m.exchange], m.routing_key, {})
        if not any(q.name == m.queue or not m.queue for q in routed):
            code, text = 312, "NO_ROUTE"
    ch.send(ch.conn.spec.method("exchange.bound-ok")(reply_code=code, reply_text=text))


def require_not_transacted(ch: Channel) -> None:
    if ch.transactional:
        raise errors.PreconditionFailed("PRECONDITION_FAILED - recover on a transacted channel")


def requeue_unacked(ch: Channel) -> None:
    """Everything delivered and unacknowledged on the channel goes back, redelivered."""
    items = list(ch.unacked.values())
    ch.unacked.clear()
    ch.settle("requeue", items)


def _recover_sync(ch: Channel, m: BasicRecoverSync) -> None:
    require_not_transacted(ch)
    requeue_unacked(ch)
    ch.send(ch.conn.spec.method("basic.recover-sync-ok")())


HANDLERS = {
    "channel.resume": _channel_ok,
    "channel.ping": _channel_ok,
    "channel.pong": _channel_ok,
    "channel.ok": _channel_ok_received,
    "exchange.bound": _exchange_bound,
    "basic.recover-sync": _recover_sync,
}
