"""The draft's basic class on the server.

Its differences from 0-9-1 that matter here: basic.qos has no qos-ok, basic.publish has
``reject-unroutable`` instead of ``mandatory``, basic.recover has no recover-ok, and basic
properties and field tables are the draft's (``properties``). Its rules are 0-9's, which
the 0-9 dialect's code follows: a prefetch size (``prefetch_size.within_prefetch_size``), a requeued
reject that must not come back to its channel (``spec09.rejects``), an empty queue name
without a declared queue (530), basic.recover refused in a transaction (406).

Messages are the model's, so a 0-10 publisher's message reaches 0-9-1 and 0-9 consumers, and
theirs reach a 0-10 consumer: a 0-10 channel's consumers deliver through ``DraftSink``, which
sends each delivery with its properties encoded the draft's way.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from amqp_protocol import Properties, errors
from amqp_protocol.generated.spec_0_10 import (
    BasicAck,
    BasicCancel,
    BasicConsume,
    BasicGet,
    BasicPublish,
    BasicQos,
    BasicRecover,
    BasicReject,
    MessageQos,
    MessageRecover,
)

from ...model.message import QueuedMessage
from ...model.queue_arguments import consumer_priority
from ...model.queues import Consumer, Queue
from ..abc import Channel
from ..dialect import ChannelHandler
from ..prefetch_size import within_prefetch_size
from ..spec09 import rejects
from . import tx
from .declarations import names_a_queue
from .properties import to_draft, to_model
from .state import state_of


class DraftSink:
    """Where the deliveries of a 0-10 channel's consumers go (``model.queues.DeliverySink``)."""

    def __init__(self, ch: Channel) -> None:
        self.ch = ch

    def can_deliver(self, consumer: Consumer) -> bool:
        ch = self.ch
        session = state_of(ch).session
        if session is not None and not session.attached:
            return False  # suspended: its deliveries wait for a session.resume
        if not (ch.flow_active and ch.conn.output.writable and not ch.closed):
            return False
        if consumer.no_ack:
            return True
        if consumer.prefetch and consumer.unacked >= consumer.prefetch:
            return False
        state = state_of(ch)
        limit = state.channel_prefetch
        if limit and len(ch.unacked) >= limit:
            return False
        return within_prefetch_size(ch, state.prefetch_size)

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        ch = self.ch
        tag = ch.track_delivery(consumer, queue, entry)
        message = queue.as_delivered(entry)
        deliver = ch.conn.spec.method("basic.deliver")(
            consumer_tag=consumer.tag,
            delivery_tag=tag,
            redelivered=entry.redelivered,
            exchange=message.exchange,
            routing_key=message.routing_key,
        )
        ch.conn.send_content(ch.id, deliver, to_draft(message.properties), message.body)

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """The queue went away: the consumer is forgotten (the draft has no server-sent
        basic.cancel; the client's next basic.cancel of it is answered cancel-ok)."""
        self.ch.consumers.pop(consumer.tag, None)


def basic_qos(ch: Channel, m: BasicQos | MessageQos) -> None:
    state = state_of(ch)
    state.prefetch_size = m.prefetch_size
    if m.global_:
        state.channel_prefetch = m.prefetch_count
    else:
        state.prefetch = m.prefetch_count
    ch.redispatch()


def consume_with(
    ch: Channel,
    sink: DraftSink,
    queue_name: str,
    tag: str,
    no_ack: bool,
    exclusive: bool,
    arguments: dict[str, Any],
) -> str:
    """A consumer of the named queue delivering through ``sink``; its tag."""
    queue = ch.queue_named(queue_name)
    tag = tag or "amq.ctag-" + base64.urlsafe_b64encode(os.urandom(16)).decode()
    if tag in ch.consumers:
        raise errors.NotAllowed(f"NOT_ALLOWED - attempt to reuse consumer tag '{tag}'")
    consumer = Consumer(
        tag,
        queue,
        sink,
        no_ack=no_ack,
        exclusive=exclusive,
        priority=consumer_priority(queue.name, queue.context.vhost, arguments),
        prefetch=state_of(ch).prefetch,
    )
    queue.add_consumer(consumer, arguments)
    ch.consumers[tag] = consumer
    return tag


def basic_consume(ch: Channel, m: BasicConsume) -> None:
    tag = consume_with(ch, DraftSink(ch), m.queue, m.consumer_tag, m.no_ack, m.exclusive,
                       m.arguments)  # fmt: skip
    if not m.no_wait:
        ch.send(ch.conn.spec.method("basic.consume-ok")(consumer_tag=tag))
    ch.consumers[tag].queue.dispatch()


def basic_cancel(ch: Channel, m: BasicCancel) -> None:
    consumer = ch.consumers.pop(m.consumer_tag, None)
    if consumer is not None:
        consumer.queue.remove_consumer(consumer)
    if not m.no_wait:
        ch.send(ch.conn.spec.method("basic.cancel-ok")(consumer_tag=m.consumer_tag))


def basic_get(ch: Channel, m: BasicGet) -> None:
    queue = ch.queue_named(m.queue)
    entry = queue.get()
    if entry is None:
        ch.send(ch.conn.spec.method("basic.get-empty")())
        return
    tag = ch.track_get(queue, entry, m.no_ack)
    message = queue.as_delivered(entry, fetched=True)
    get_ok = ch.conn.spec.method("basic.get-ok")(
        delivery_tag=tag,
        redelivered=entry.redelivered,
        exchange=message.exchange,
        routing_key=message.routing_key,
        message_count=queue.message_count,
    )
    ch.conn.send_content(ch.id, get_ok, to_draft(message.properties), message.body)


def basic_recover(ch: Channel, m: BasicRecover | MessageRecover) -> None:
    """Every unacknowledged delivery of the channel goes back to its queue (the draft has
    no recover-ok); refused in a transaction (rule basic.recover:non-transacted-session)."""
    if state_of(ch).tx is not None:
        raise errors.PreconditionFailed("PRECONDITION_FAILED - basic.recover in a transaction")
    if not m.requeue:
        raise errors.NotImplemented_("NOT_IMPLEMENTED - basic.recover requeue=false")
    items = list(ch.unacked.values())
    ch.unacked.clear()
    ch.settle("requeue", items)


def basic_publish(ch: Channel, m: BasicPublish, properties: Properties, body: bytes) -> None:
    """Published as a 0-9-1 basic.publish without mandatory (the model's message)."""
    for flag in ("reject_unroutable", "immediate"):
        if getattr(m, flag):
            raise errors.NotImplemented_(f"NOT_IMPLEMENTED - basic.publish {flag}=true")
    tx.publish(ch, m.exchange, m.routing_key, to_model(properties), body)


def basic_ack(ch: Channel, m: BasicAck) -> None:
    """Now or at commit (``tx.ack``). A non-zero tag must be one of the channel's
    unacknowledged deliveries, with ``multiple`` too (rule basic.ack.multiple:validation;
    RabbitMQ's 0-9-1 lets a multiple ack name a tag beyond the last delivery)."""
    if m.delivery_tag and m.delivery_tag not in ch.unacked:
        raise errors.PreconditionFailed(
            f"PRECONDITION_FAILED - unknown delivery tag {m.delivery_tag}"
        )
    tx.ack(ch, m.delivery_tag, m.multiple)


def basic_reject(ch: Channel, m: BasicReject) -> None:
    rejects.reject(ch, m.delivery_tag, m.requeue)


HANDLERS: dict[str, ChannelHandler] = {
    "basic.qos": basic_qos,
    "basic.consume": names_a_queue(basic_consume),
    "basic.cancel": basic_cancel,
    "basic.get": names_a_queue(basic_get),
    "basic.recover": basic_recover,
    "basic.ack": basic_ack,
    "basic.reject": basic_reject,
}
