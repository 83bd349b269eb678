"""The message class of 0-9: transfer, consume, cancel, get, recover, qos, the reference
methods (open, append, close, checkpoint, resume) and the replies ok, empty, reject, offset.

A message's body travels inline in message.transfer or, for large messages, in a
*reference*: message.open names it, message.append adds data, message.close ends it; a
transfer whose body names an open reference is routed, and acknowledged with message.ok, when
the reference closes (rule message.close:01: not before); message.close's own ok follows.
message.checkpoint saves a reference's data under an identifier that outlives the
connection; message.resume reopens a reference from it and answers message.offset.

The server's own transfers (to consumers and for message.get) are answered by the client
with message.ok or message.reject, in order: ``transfers_awaiting_ok`` holds their delivery
tags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amqp_protocol import errors
from amqp_protocol.generated.any_version import (
    MessageAppend,
    MessageCancel,
    MessageCheckpoint,
    MessageClose,
    MessageConsume,
    MessageGet,
    MessageOk,
    MessageOpen,
    MessageQos,
    MessageRecover,
    MessageReject,
    MessageResume,
    MessageTransfer,
)
from amqp_protocol.values import Content

from .. import message_references as refs
from . import consumers, staging
from .channel_extras import requeue_unacked, require_not_transacted
from .class_message import ClassMessage
from .lanes import lane
from .publishing import publish
from .state import HeldTransfer, state_of

if TYPE_CHECKING:
    from ...model.message import QueuedMessage
    from ...model.queues import Consumer, Queue
    from ..abc import Channel

#: message.transfer fields that travel with the message (not the per-delivery ones).
_PER_DELIVERY = ("ticket", "destination", "redelivered", "body")


def _ok(ch: Channel) -> None:
    ch.send(ch.conn.spec.method("message.ok")())


def _send_transfer(ch: Channel, destination: str, entry: QueuedMessage, tag: int | None) -> None:
    message = entry.message
    transfer = ch.conn.spec.method("message.transfer")(
        **message.properties,
        destination=destination,
        redelivered=entry.redelivered,
        body=Content(message.body),
    )
    state_of(ch).transfers_awaiting_ok.append(tag)
    ch.send(transfer)


class MessageSink:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def can_deliver(self, consumer: Consumer) -> bool:
        return consumers.may_deliver(self.channel, consumer)

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        tag = self.channel.track_delivery(consumer, queue, entry)
        _send_transfer(self.channel, consumer.tag, entry, None if consumer.no_ack else tag)

    def consumer_cancelled(self, consumer: Consumer) -> None:
        consumers.forget(self.channel, consumer)


def _transfer(ch: Channel, m: MessageTransfer) -> None:
    headers = {f: getattr(m, f) for f in m.FIELD_NAMES if f not in _PER_DELIVERY}
    headers["exchange"] = m.destination
    body: Content = m.body
    data = b"" if body.reference else body.data
    message = ClassMessage(
        "message", m.destination, m.routing_key, headers, data, priority=m.priority
    )
    if body.reference:
        ext = state_of(ch)
        reference = refs.reference_name(body.data)
        if reference not in ext.references:
            raise errors.NotFound(f"NOT_FOUND - unknown reference '{reference}'")
        exchange = ch.vhost.exchange(m.destination)
        ext.held.setdefault(reference, []).append(HeldTransfer(exchange, message))
        return  # acknowledged when the reference closes (rule message.close:01)
    if not publish(ch, m.destination, message, False, m.immediate):
        ch.send(ch.conn.spec.method("message.reject")(code=1, text="NO_CONSUMERS"))
        return
    _ok(ch)


def _consume(ch: Channel, m: MessageConsume) -> None:
    consumer = consumers.consume(
        ch,
        m.queue,
        m.destination,
        "message",
        MessageSink(ch),
        no_ack=m.no_ack,
        exclusive=m.exclusive,
    )
    _ok(ch)
    consumer.queue.dispatch()


def _cancel(ch: Channel, m: MessageCancel) -> None:
    consumers.cancel(ch, m.destination)
    _ok(ch)


def _get(ch: Channel, m: MessageGet) -> None:
    queue = lane(ch.vhost, consumers.named_queue(ch, m.queue), "message")
    entry = queue.get()
    if entry is None:
        ch.send(ch.conn.spec.method("message.empty")())
        return
    tag = ch.track_get(queue, entry, m.no_ack)
    _send_transfer(ch, m.destination, entry, None if m.no_ack else tag)
    _ok(ch)


def _recover(ch: Channel, m: MessageRecover) -> None:
    require_not_transacted(ch)
    requeue_unacked(ch)
    _ok(ch)


def _qos(ch: Channel, m: MessageQos) -> None:
    state_of(ch).prefetch["message"] = m.prefetch_count
    _ok(ch)


def _settle_transfer(ch: Channel, action: str) -> None:
    """The client answered our oldest outstanding transfer."""
    awaiting = state_of(ch).transfers_awaiting_ok
    if not awaiting:
        raise errors.CommandInvalid("COMMAND_INVALID - no message.transfer awaits an answer")
    tag = awaiting.popleft()
    if tag is not None and tag in ch.unacked:
        ch.settle_or_hold(action, tag, False)


def _client_ok(ch: Channel, m: MessageOk) -> None:
    _settle_transfer(ch, "ack")


def _client_reject(ch: Channel, m: MessageReject) -> None:
    _settle_transfer(ch, "reject")


def _open(ch: Channel, m: MessageOpen) -> None:
    refs.open_reference(state_of(ch).references, refs.reference_name(m.reference), b"")
    _ok(ch)


def _append(ch: Channel, m: MessageAppend) -> None:
    refs.open_data(state_of(ch).references, refs.reference_name(m.reference)).extend(
        m.bytes.encode() if isinstance(m.bytes, str) else m.bytes
    )
    _ok(ch)


def _close(ch: Channel, m: MessageClose) -> None:
    reference = refs.reference_name(m.reference)
    data = bytes(refs.open_data(state_of(ch).references, reference))
    ext = state_of(ch)
    del ext.references[reference]
    for held in ext.held.pop(reference, []):
        held.message.body = data
        publish(ch, held.exchange.name, held.message, False)
        _ok(ch)  # the held transfer's
    _ok(ch)


def _checkpoint(ch: Channel, m: MessageCheckpoint) -> None:
    data = refs.open_data(state_of(ch).references, refs.reference_name(m.reference))
    staging.put(ch, "message:" + m.identifier, staging.Staged(bytes(data)))
    _ok(ch)


def _resume(ch: Channel, m: MessageResume) -> None:
    saved = staging.get(ch, "message:" + m.identifier)
    data = saved.data if saved is not None else b""
    refs.open_reference(state_of(ch).references, refs.reference_name(m.reference), data)
    ch.send(ch.conn.spec.method("message.offset")(value=len(data)))


HANDLERS = {
    "message.transfer": _transfer,
    "message.consume": _consume,
    "message.cancel": _cancel,
    "message.get": _get,
    "message.recover": _recover,
    "message.qos": _qos,
    "message.ok": _client_ok,
    "message.reject": _client_reject,
    "message.open": _open,
    "message.append": _append,
    "message.close": _close,
    "message.checkpoint": _checkpoint,
    "message.resume": _resume,
}
