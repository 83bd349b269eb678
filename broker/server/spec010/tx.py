"""The draft's tx class on the server: select, commit and rollback, which the draft answers
with nothing (it drops their -ok replies; the core's tx handlers send them, so the dialect
keeps its own transaction).

In a transaction a channel's publishes (basic.publish, message.transfer) are held until
tx.commit, their exchange checked when they arrive (404 then); its acknowledgements
(basic.ack, session.ack) take the deliveries out of the unacknowledged ones and settle them
at commit; tx.rollback forgets the publishes and makes the acknowledged deliveries
unacknowledged again. Rejects are not transactional. A channel that closes with a
transaction open requeues the deliveries it acknowledged in it. Committing or rolling back
a channel that never selected tx is 406.
"""

from __future__ import annotations

from typing import Any

from amqp_protocol import errors
from amqp_protocol.generated import spec_0_9_1

from ..abc import Channel
from ..dialect import ChannelHandler
from .state import state_of


def publish(ch: Channel, exchange: str, routing_key: str, properties: Any, body: bytes) -> None:
    """Publish now, or at commit in a transaction."""
    state = state_of(ch)
    if state.tx is None:
        publish_now(ch, exchange, routing_key, properties, body)
        return
    ch.vhost.exchange(exchange)  # a missing exchange is refused when the publish arrives
    state.tx.publishes.append((exchange, routing_key, properties, body))


def publish_now(ch: Channel, exchange: str, routing_key: str, properties: Any, body: bytes) -> None:
    publish = spec_0_9_1.BasicPublish(exchange=exchange, routing_key=routing_key)
    ch.basic_publish(publish, properties, body)


def ack(ch: Channel, tag: int, multiple: bool) -> None:
    """Acknowledge now, or at commit in a transaction."""
    state = state_of(ch)
    if state.tx is None:
        ch.settle_or_hold("ack", tag, multiple)
    else:
        state.tx.acks.extend(ch.take_unacked(tag, multiple))


def _select(ch: Channel, m: object) -> None:
    state = state_of(ch)
    if state.dtx_selected:
        raise errors.CommandInvalid("COMMAND_INVALID - the channel has selected dtx")
    if state.tx is None:
        state.tx = Transaction()


def _open(ch: Channel) -> Transaction:
    state = state_of(ch)
    transaction = state.tx
    if transaction is None or state.dtx_selected:  # a dtx branch's work is not tx's
        raise errors.PreconditionFailed("PRECONDITION_FAILED - channel is not transactional")
    return transaction


def _commit(ch: Channel, m: object) -> None:
    carry_out(ch, _open(ch))


def carry_out(ch: Channel, transaction: Transaction, took: Channel | None = None) -> None:
    """Publish a transaction's held publishes on ``ch`` and settle its acknowledgements on
    ``took``, the channel the deliveries were taken from (default ``ch``): tx.commit, and
    the commit of a dtx branch from any channel."""
    publishes, transaction.publishes = transaction.publishes, []
    acks, transaction.acks = transaction.acks, []
    for exchange, routing_key, properties, body in publishes:
        publish_now(ch, exchange, routing_key, properties, body)
    if acks:
        (took or ch).settle("ack", [item for _, item in acks])


def _rollback(ch: Channel, m: object) -> None:
    transaction = _open(ch)
    transaction.publishes.clear()
    restored = sorted([*ch.unacked.items(), *transaction.acks], key=lambda pair: pair[0])
    transaction.acks.clear()
    ch.unacked.clear()
    ch.unacked.update(restored)


def closing(ch: Channel) -> None:
    """The channel closes: deliveries acknowledged in an open transaction are requeued."""
    transaction = state_of(ch).tx
    if transaction is not None and transaction.acks:
        items = [item for _, item in transaction.acks]
        transaction.acks.clear()
        ch.settle("requeue", items)


class Transaction:
    def __init__(self) -> None:
        #: (exchange, routing key, basic properties, body)
        self.publishes: list[tuple[str, str, Any, bytes]] = []
        #: (delivery tag, delivery) taken out of the channel's unacknowledged ones
        self.acks: list[tuple[int, Any]] = []


HANDLERS: dict[str, ChannelHandler] = {
    "tx.select": _select,
    "tx.commit": _commit,
    "tx.rollback": _rollback,
}
