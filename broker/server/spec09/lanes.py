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
from typing import Any

from ...model.message import Message
from ...model.queues import Queue

#: Ten priority levels (0-9): the file, stream and message classes require at least two.
_LANE_ARGUMENTS = {"x-max-priority": 9}
_lanes: weakref.WeakKeyDictionary[Queue, dict[str, Queue]] = weakref.WeakKeyDictionary()


def lane(queue: Queue, content_class: str) -> Queue:
    """The lane holding ``content_class`` messages of ``queue`` (created on first use)."""
    by_class = _lanes.setdefault(queue, {})
    found = by_class.get(content_class)
    if found is None:
        found = Queue(queue.vhost, queue.name, arguments=_LANE_ARGUMENTS)
        by_class[content_class] = found
    return found


def lanes_of(queue: Queue) -> list[Queue]:
    """The lanes ``queue`` has so far (for message counts and purges)."""
    return list(_lanes.get(queue, {}).values())


def drop_lanes(queue: Queue) -> None:
    """``queue`` was deleted: its lanes go, and their consumers with them."""
    for gone in _lanes.pop(queue, {}).values():
        for consumer in gone.destroy():
            consumer.sink.consumer_cancelled(consumer)


def lane_totals(queue: Queue) -> tuple[int, int]:
    """Messages and consumers of ``queue`` over every content class."""
    lanes = lanes_of(queue)
    return (
        queue.message_count + sum(q.message_count for q in lanes),
        len(queue.consumers) + sum(len(q.consumers) for q in lanes),
    )


class ClassMessage(Message):
    """A message of the file, stream or message class.

    ``properties`` is the class's generated properties object (file, stream) or, for the
    message class, the dict of message.transfer's header fields. ``Message.__init__`` reads
    basic properties, so the shared attributes are filled here.
    """

    def __init__(
        self,
        content_class: str,
        exchange: str,
        routing_key: str,
        properties: Any,
        body: bytes,
        *,
        priority: int | None = None,
        identifier: str = "",
    ) -> None:
        self.content_class = content_class
        self.exchange = exchange
        self.routing_key = routing_key
        self.properties = properties
        self.body = body
        self.identifier = identifier
        self._header = None
        self._envelope = None
        self.priority = priority if isinstance(priority, int) else 0
        self.ttl = None
        self.msg_id = 0  #: never journaled: lanes are transient

    @property
    def persistent(self) -> bool:
        return False

    @property
    def headers(self) -> dict[str, Any]:
        headers = getattr(self.properties, "headers", None)
        return headers if isinstance(headers, dict) else {}
