"""The draft's message class (120) on the server, as far as it goes: transfer with an inline
body, consume, cancel, get (answered by a transfer or message.empty), qos and recover, over
the model's messages, so a message transferred by a 0-10 client reaches a basic consumer of
any version and the reverse.

Fields: a client's transfer names its exchange in ``destination`` (empty: the default
exchange; rule message.transfer.destination:blank-destination) and its routing key; its
header fields become the model's basic properties (``application-headers`` the headers,
``ttl`` the expiration in milliseconds, ``timestamp`` seconds since the epoch). The server's
transfers carry the consumer's (or get's) ``destination``, the message's exchange and
routing key and the same fields back.

References (staging): message.open makes an empty reference on the channel, message.append
adds to it, message.resume reopens one from a checkpoint and answers message.offset with its
length (0 for an unknown identifier); message.checkpoint saves an open reference's data under
its identifier, per virtual host and user, beyond the connection (``spec09.staging``, the
0-9 dialect's store, which 0-9's message.checkpoint uses too); a transfer whose body names an
open reference is held and published when message.close ends the reference (rule
message.close:message-acknowledge-after-close). Opening a reference that is open is a 406
(rule message.open.reference:duplicate-reference), naming one that is not open a 404
(non-existent-reference).

Acknowledgement: the draft drops message.ok; a client acknowledges with session.ack, whose
frame-ids the draft leaves to a later chapter. Here the server's deliveries on a channel
(message.transfer, basic.deliver, basic.get-ok alike) are numbered from 1, which are their
delivery tags, and session.ack settles those up to ``cumulative-seen-mark`` and those in
``seen-frame-set`` (``sessions``); message.reject from the client requeues nothing (it
answers a transfer of the client's, in the draft's grammar) and is ignored.

Not implemented (540 naming them): a transfer's reject-unroutable and immediate;
message.offset and message.empty from a client.
"""

from __future__ import annotations

import datetime
from typing import Any

from amqp_protocol import errors
from amqp_protocol.generated import spec_0_9_1
from amqp_protocol.generated.spec_0_10 import (
    MessageAppend,
    MessageCancel,
    MessageCheckpoint,
    MessageClose,
    MessageConsume,
    MessageGet,
    MessageOpen,
    MessageQos,
    MessageRecover,
    MessageResume,
    MessageTransfer,
)
from amqp_protocol.values import Content

from ...model.message import Message, QueuedMessage
from ...model.queues import Consumer, Queue
from .. import message_references as refs
from ..abc import Channel
from ..dialect import ChannelHandler
from ..spec09 import staging
from ..spec09.consumers import named_queue
from . import tx
from .basic import DraftSink, basic_qos, basic_recover, consume_with
from .state import state_of

_MODEL = spec_0_9_1.BasicProperties
#: message.transfer's header fields that are basic properties of the same name
_SAME = (
    "content_type",
    "content_encoding",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "message_id",
    "type",
    "user_id",
    "app_id",
)


def _properties(m: MessageTransfer) -> Any:
    fields: dict[str, Any] = {name: getattr(m, name) for name in _SAME if getattr(m, name)}
    if m.application_headers:
        fields["headers"] = m.application_headers
    if m.ttl:
        fields["expiration"] = str(m.ttl)
    if m.timestamp:
        fields["timestamp"] = datetime.datetime.fromtimestamp(m.timestamp, datetime.timezone.utc)
    return _MODEL(**fields)


def _transfer_fields(message: Message) -> dict[str, Any]:
    p = message.properties
    fields: dict[str, Any] = {name: getattr(p, name) for name in _SAME if getattr(p, name)}
    if p.headers:
        fields["application_headers"] = p.headers
    if p.expiration and p.expiration.isdigit():
        fields["ttl"] = int(p.expiration)
    if isinstance(p.timestamp, datetime.datetime):
        fields["timestamp"] = int(p.timestamp.timestamp())
    return fields


def send_transfer(
    ch: Channel, destination: str, queue: Queue, entry: QueuedMessage, fetched: bool = False
) -> None:
    message = queue.as_delivered(entry, fetched=fetched)
    transfer = ch.conn.spec.method("message.transfer")(
        destination=destination,
        redelivered=entry.redelivered,
        exchange=message.exchange,
        routing_key=message.routing_key,
        body=Content(message.body),
        **_transfer_fields(message),
    )
    ch.send(transfer)


class TransferSink(DraftSink):
    """A message-class consumer: its deliveries are message.transfers."""

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        self.ch.track_delivery(consumer, queue, entry)
        send_transfer(self.ch, consumer.tag, queue, entry)


def transfer(ch: Channel, m: MessageTransfer) -> None:
    for flag in ("reject_unroutable", "immediate"):
        if getattr(m, flag):
            raise errors.NotImplemented_(f"NOT_IMPLEMENTED - message.transfer {flag}=true")
    if m.body.reference:
        reference = refs.reference_name(m.body.data)
        refs.open_data(state_of(ch).references, reference)
        held = state_of(ch).held.setdefault(reference, [])
        held.append((m.destination, m.routing_key, _properties(m)))
        return
    tx.publish(ch, m.destination, m.routing_key, _properties(m), m.body.data)


def open_reference(ch: Channel, m: MessageOpen) -> None:
    refs.open_reference(state_of(ch).references, refs.reference_name(m.reference), b"")


def append(ch: Channel, m: MessageAppend) -> None:
    data = m.bytes.encode() if isinstance(m.bytes, str) else m.bytes
    refs.open_data(state_of(ch).references, refs.reference_name(m.reference)).extend(data)


def close_reference(ch: Channel, m: MessageClose) -> None:
    reference = refs.reference_name(m.reference)
    data = bytes(refs.open_data(state_of(ch).references, reference))
    state = state_of(ch)
    del state.references[reference]
    for exchange, routing_key, properties in state.held.pop(reference, []):
        tx.publish(ch, exchange, routing_key, properties, data)


def checkpoint(ch: Channel, m: MessageCheckpoint) -> None:
    data = refs.open_data(state_of(ch).references, refs.reference_name(m.reference))
    staging.put(ch, "message-0-10:" + m.identifier, staging.Staged(bytes(data)))


def resume(ch: Channel, m: MessageResume) -> None:
    saved = staging.get(ch, "message-0-10:" + m.identifier)
    data = saved.data if saved is not None else b""
    refs.open_reference(state_of(ch).references, refs.reference_name(m.reference), data)
    ch.send(ch.conn.spec.method("message.offset")(value=len(data)))


def consume(ch: Channel, m: MessageConsume) -> None:
    tag = consume_with(ch, TransferSink(ch), m.queue, m.destination, m.no_ack, m.exclusive,
                       m.filter)  # fmt: skip
    ch.consumers[tag].queue.dispatch()


def cancel(ch: Channel, m: MessageCancel) -> None:
    """Rule message.cancel:ignore: an unknown destination is no error."""
    consumer = ch.consumers.pop(m.destination, None)
    if consumer is not None:
        consumer.queue.remove_consumer(consumer)


def get(ch: Channel, m: MessageGet) -> None:
    """Rule message.get.queue:empty-name: "" with no queue declared on the channel is 530."""
    queue = named_queue(ch, m.queue)
    entry = queue.get()
    if entry is None:
        ch.send(ch.conn.spec.method("message.empty")())
        return
    ch.track_get(queue, entry, m.no_ack)
    send_transfer(ch, m.destination, queue, entry, fetched=True)


def qos(ch: Channel, m: MessageQos) -> None:
    """With its prefetch size (rule message.qos.prefetch-size:non-responsive-client)."""
    basic_qos(ch, m)


def recover(ch: Channel, m: MessageRecover) -> None:
    """Rule message.recover:transacted-session: refused (406) in a transaction, tx's or a
    dtx branch's."""
    if state_of(ch).tx is not None:
        raise errors.PreconditionFailed("PRECONDITION_FAILED - recover on a transacted channel")
    basic_recover(ch, m)


def _ignore(ch: Channel, m: object) -> None:
    pass


HANDLERS: dict[str, ChannelHandler] = {
    "message.transfer": transfer,
    "message.consume": consume,
    "message.cancel": cancel,
    "message.get": get,
    "message.qos": qos,
    "message.recover": recover,
    "message.reject": _ignore,
    "message.open": open_reference,
    "message.append": append,
    "message.close": close_reference,
    "message.checkpoint": checkpoint,
    "message.resume": resume,
}
