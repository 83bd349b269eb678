"""Contents of the 0-9 content classes (file, stream, message) in a queue.

Rule ``queue:any-content``: any content class may be sent to any queue and is queued and
delivered independently of the others. Each (queue, content class) pair other than basic
gets its own *lane*: a private ``Queue`` object that shares the real queue's virtual host
but holds only that class's messages and consumers. Routing finds the real queue; the
content goes to its lane. Basic content keeps using the real queue untouched, so 0-9-1
traffic never sees the lanes.
"""

from __future__ import annotations

import weakref

from ...model.queues import Queue
from . import durable_lanes

#: Ten priority levels (0-9): the file, stream and message classes require at least two.
_LANE_ARGUMENTS = {"x-max-priority": 9}
_lanes: weakref.WeakKeyDictionary[Queue, dict[str, Queue]] = weakref.WeakKeyDictionary()


def lane(queue: Queue, content_class: str, data_dir: str | None) -> Queue:
    """The lane holding ``content_class`` messages of ``queue`` (created on first use). The
    file and message lanes of a durable queue keep messages under ``data_dir`` (see
    durable_lanes)."""
    by_class = _lanes.setdefault(queue, {})
    found = by_class.get(content_class)
    if found is None:
        if content_class in durable_lanes.CLASSES and data_dir and queue.queue_id:
            where = durable_lanes.directory(data_dir, content_class, queue)
            found = durable_lanes.DurableLane(queue.vhost, queue.name, _LANE_ARGUMENTS, where)
        else:
            found = Queue(queue.vhost, queue.name, arguments=_LANE_ARGUMENTS)
        by_class[content_class] = found
    return found


def lanes_of(queue: Queue, data_dir: str | None) -> list[Queue]:
    """The lanes ``queue`` has so far (for message counts and purges), with the messages
    stored before a restart loaded."""
    if data_dir and queue.queue_id:
        for content_class in durable_lanes.CLASSES:
            if durable_lanes.directory(data_dir, content_class, queue).is_dir():
                lane(queue, content_class, data_dir)
    return list(_lanes.get(queue, {}).values())


def drop_lanes(queue: Queue, data_dir: str | None) -> None:
    """``queue`` was deleted: its lanes go, and their consumers and stored files with them."""
    for gone in _lanes.pop(queue, {}).values():
        for consumer in gone.destroy():
            consumer.sink.consumer_cancelled(consumer)
    durable_lanes.discard(data_dir, queue)


def lane_totals(queue: Queue, data_dir: str | None) -> tuple[int, int]:
    """Messages and consumers of ``queue`` over every content class."""
    lanes = lanes_of(queue, data_dir)
    return (
        queue.message_count + sum(q.message_count for q in lanes),
        len(queue.consumers) + sum(len(q.consumers) for q in lanes),
    )
