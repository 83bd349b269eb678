"""Consumers of the file, stream and message classes: each consumes one lane of a queue.

They live in the channel's ``consumers`` table next to basic consumers (so channel close
cancels them and tags stay unique per channel) and their unacknowledged deliveries in its
``unacked`` table (so acks, rejects, tx and recover work as for basic content).
"""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING

from amqp_protocol import errors

from ...model.queues import Consumer, DeliverySink
from .lanes import lane
from .state import state_of

if TYPE_CHECKING:
    from ...model.queues import Queue
    from ..abc import Channel


def named_queue(channel: Channel, name: str) -> Queue:
    """The queue a 0-9 method names; "" without a queue declared on the channel is the
    connection exception 530 the spec asks for."""
    if not name and channel.last_queue is None:
        raise errors.NotAllowed("NOT_ALLOWED - no queue named and none declared on this channel")
    return channel.queue_named(name)


def consume(
    channel: Channel,
    queue_name: str,
    tag: str,
    content_class: str,
    sink: DeliverySink,
    *,
    no_ack: bool,
    exclusive: bool,
) -> Consumer:
    queue = lane(channel.vhost, named_queue(channel, queue_name), content_class)
    tag = tag or "amq.ctag-" + base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if tag in channel.consumers:
        raise errors.NotAllowed(f"NOT_ALLOWED - attempt to reuse consumer tag '{tag}'")
    if queue.consumers and (exclusive or any(c.exclusive for c in queue.consumers)):
        raise errors.ResourceLocked(
            f"RESOURCE_LOCKED - cannot obtain exclusive access to queue '{queue.name}'"
        )
    prefetch = state_of(channel).prefetch.get(content_class, 0)
    consumer = Consumer(tag, queue, sink, no_ack=no_ack, exclusive=exclusive, prefetch=prefetch)
    queue.add_consumer(consumer)
    channel.consumers[tag] = consumer
    return consumer


def cancel(channel: Channel, tag: str) -> None:
    consumer = channel.consumers.pop(tag, None)
    if consumer is not None:
        consumer.queue.remove_consumer(consumer)


def may_deliver(channel: Channel, consumer: Consumer) -> bool:
    """Flow, socket and the consumer's prefetch window allow one more delivery."""
    if not (channel.flow_active and channel.conn.output.writable):
        return False
    return consumer.no_ack or not consumer.prefetch or consumer.unacked < consumer.prefetch


def forget(channel: Channel, consumer: Consumer) -> None:
    """The consumer's queue went away."""
    channel.consumers.pop(consumer.tag, None)
