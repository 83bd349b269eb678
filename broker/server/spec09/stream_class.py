"""The stream content class (not RabbitMQ stream queues): qos with a consume rate,
consume, cancel, publish, return and deliver. Stream content is never acknowledged: a
delivered message leaves the queue at once (rule stream:03).

The consume rate (stream.qos consume-rate, octets per second, 0 = unlimited) paces a
channel's stream deliveries: after a message of n octets the next waits n / rate seconds.

stream.qos prefetch-size and prefetch-count are accepted and have no effect, as rule
stream.qos.consume-rate:01 allows ("The server MAY ignore the prefetch values"). A prefetch
window is what a client holds "in advance" of finishing with a message; the acknowledged
classes close it with their acks, but stream content is never acknowledged (rule stream:03),
so the server cannot know when the client finished with a message, and no window it keeps
could close and reopen on the client's progress. What bounds the stream content sent ahead
is TCP flow control: a connection whose socket is backed up (over ``write_buffer_high``
octets of output waiting) gets no delivery of any class, and the queue keeps its messages for
other consumers (``consumers.may_deliver``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amqp_protocol.generated.any_version import (
    StreamCancel,
    StreamConsume,
    StreamProperties,
    StreamPublish,
    StreamQos,
)

from . import consumers
from .class_message import ClassMessage
from .publishing import publish
from .state import state_of

if TYPE_CHECKING:
    from ...model.message import QueuedMessage
    from ...model.queues import Consumer, Queue
    from ..abc import Channel


class StreamSink:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def can_deliver(self, consumer: Consumer) -> bool:
        ch = self.channel
        if not consumers.may_deliver(ch, consumer):
            return False
        ext = state_of(ch)
        if not ext.consume_rate:
            return True
        wait = ext.next_stream_at - ch.conn.loop.time()
        if wait <= 0:
            return True
        if ext.rate_timer is None:
            ext.rate_timer = ch.conn.loop.call_later(wait, self._rate_elapsed)
        return False

    def _rate_elapsed(self) -> None:
        state_of(self.channel).rate_timer = None
        if not self.channel.closed:
            self.channel.redispatch()

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        ch = self.channel
        ext = state_of(ch)
        message = entry.message
        if ext.consume_rate:
            start = max(ext.next_stream_at, ch.conn.loop.time())
            ext.next_stream_at = start + len(message.body) / ext.consume_rate
        tag = ch.track_delivery(consumer, queue, entry)
        deliver = ch.conn.spec.method("stream.deliver")(
            consumer_tag=consumer.tag, delivery_tag=tag, exchange=message.exchange, queue=queue.name
        )
        ch.conn.send_content(ch.id, deliver, message.properties, message.body)

    def consumer_cancelled(self, consumer: Consumer) -> None:
        consumers.forget(self.channel, consumer)


def _qos(ch: Channel, m: StreamQos) -> None:
    """Sets the consume rate; the prefetch values are ignored (see the module's doc)."""
    ext = state_of(ch)
    ext.consume_rate = m.consume_rate
    ch.send(ch.conn.spec.method("stream.qos-ok")())
    ch.redispatch()


def _consume(ch: Channel, m: StreamConsume) -> None:
    consumer = consumers.consume(
        ch, m.queue, m.consumer_tag, "stream", StreamSink(ch), no_ack=True, exclusive=m.exclusive
    )
    if not m.no_wait:
        ch.send(ch.conn.spec.method("stream.consume-ok")(consumer_tag=consumer.tag))
    consumer.queue.dispatch()


def _cancel(ch: Channel, m: StreamCancel) -> None:
    consumers.cancel(ch, m.consumer_tag)
    if not m.no_wait:
        ch.send(ch.conn.spec.method("stream.cancel-ok")(consumer_tag=m.consumer_tag))


def stream_publish(
    ch: Channel, m: StreamPublish, properties: StreamProperties, body: bytes
) -> None:
    message = ClassMessage(
        "stream", m.exchange, m.routing_key, properties, body, priority=properties.priority
    )
    publish(ch, m.exchange, message, m.mandatory, m.immediate)


HANDLERS = {"stream.qos": _qos, "stream.consume": _consume, "stream.cancel": _cancel}
