"""basic.reject / file.reject with requeue on a 0-9 channel (rules basic.reject.requeue:01,
file.reject.requeue:01), and basic.reject on a 0-10 draft channel (its rule
basic.reject.requeue:requeue-strategy): the message must not come back to the same channel.

It goes straight to another channel's consumer of its queue that can take it now; failing
that, the rejecting channel *parks* it, and it returns to its queue (redelivered) when that
channel closes: the "redeliver it to the same client at a later stage" the rule allows,
which loses nothing. In a transaction the requeue happens at tx.commit, the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .state import state_of

if TYPE_CHECKING:
    from ...model.message import QueuedMessage
    from ...model.queues import Consumer, Queue
    from ..abc import Channel, Unacked


def reject(ch: Channel, delivery_tag: int, requeue: bool) -> None:
    ch.conn.output.cancel_content(ch.id, delivery_tag)  # rule basic.reject:01: if still being sent
    if not requeue or ch.transactional:
        ch.settle_or_hold("requeue" if requeue else "reject", delivery_tag, False)
        return
    requeue_elsewhere(ch, [item for _, item in ch.take_unacked(delivery_tag, False)])


def requeue_elsewhere(ch: Channel, items: list[Unacked]) -> None:
    """Hand each rejected delivery to another channel's consumer, or park it."""
    parked = state_of(ch).parked
    for queue in ch.release(items):
        queue.dispatch()
    for _, queue, entry in items:
        entry.redelivered = True
        other = _other_consumer(ch, queue)
        if other is None:
            parked.append((queue, entry))  # counted by queue.requeue when it goes back
            continue
        if not queue.returned(entry):  # over its x-delivery-limit: dead-lettered
            continue
        if other.no_ack:
            queue.settle(entry)
        other.sink.deliver(other, queue, entry)


def _other_consumer(ch: Channel, queue: Queue) -> Consumer | None:
    for consumer in queue.consumers:
        if ch.consumers.get(consumer.tag) is not consumer and consumer.sink.can_deliver(consumer):
            return consumer
    return None


def release_parked(ch: Channel) -> None:
    """The channel is closing: its parked messages go back to their queues. The channel
    takes no delivery from now on (its consumers are still registered at this point)."""
    ext = state_of(ch)
    ch.flow_active = False
    by_queue: dict[Queue, list[QueuedMessage]] = {}
    for queue, entry in ext.parked:
        by_queue.setdefault(queue, []).append(entry)
    ext.parked.clear()
    for queue, entries in by_queue.items():
        queue.requeue(entries)
