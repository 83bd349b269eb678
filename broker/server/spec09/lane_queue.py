"""A lane: the messages and consumers of one 0-9 content class (file, stream, message) in a
queue (see lanes). Two things make it more than a private ``Queue``:

* Its consumers count as the queue's: the queue is not unused (auto-delete, ``x-expires``)
  while a lane of it has consumers, and an auto-delete queue goes when the last consumer of
  any class goes (``VirtualHost.in_use``, ``delete_unused_queue``).
* Rules file:01 ("The server MUST make a best-effort to hold file messages on a reliable
  storage mechanism") and message:01 (the same, SHOULD, for persistent messages of the
  message class): the file and message lanes of a durable queue journal every file message
  and every persistent (delivery-mode 2) message-class message in the broker's journal, under
  the queue's journal id with their class id (format 2, docs/storage-format.md). They are
  acked there when they leave the lane for good, and recovery puts them back in their lane,
  in order and marked redelivered (``lanes.restore``). Stream content is never kept (the
  stream class has no acknowledgements).

The same encoding (``encode``, ``decode``) is the codec of the three classes (registered by
``lanes.register_contents``): a lane larger than memory spills its messages to disk as a
basic queue does (rule message:04), and they come back of their class.
"""

from __future__ import annotations

import copy
import dataclasses
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from amqp_protocol import SPEC_0_9, values

from ...model.message import Message
from ...model.queues import Queue
from .class_message import ClassMessage

if TYPE_CHECKING:
    from ...model.queues import Consumer
    from ...model.vhost import VirtualHost

#: AMQP class ids of the content classes whose lanes are journaled.
JOURNALED = {"file": 70, "message": 120}
_LENGTH = struct.Struct("<I")


def kept(message: ClassMessage) -> bool:
    """Every file message; message-class messages with delivery-mode 2 (persistent)."""
    if message.content_class == "message":
        return message.properties.get("delivery_mode") == 2
    return message.content_class == "file"


class Lane(Queue):
    """The ``content_class`` lane of ``queue``, a queue of ``vhost``; what it lets go goes
    to ``dead_letter``."""

    def __init__(
        self,
        vhost: VirtualHost,
        queue: Queue,
        content_class: str,
        arguments: dict[str, Any],
        dead_letter: Callable[[Queue, Message, str], None],
    ) -> None:
        context = dataclasses.replace(queue.context, dead_letter=dead_letter)
        super().__init__(context, queue.name, arguments=arguments)
        self.vhost = vhost
        self.of = queue
        self.content_class = content_class
        if content_class in JOURNALED:
            self.queue_id = queue.queue_id  # journal ids are unique: acks name the message

    def publish(self, message: Message) -> bool:
        assert isinstance(message, ClassMessage)
        if self.queue_id and kept(message):
            # Each lane journals (and acks) its own copy: a message routed to several queues
            # has a journal id per lane.
            message = copy.copy(message)
            class_id = JOURNALED[self.content_class]
            message.msg_id = self.context.store.content_routed(self, class_id, encode(message))
        return super().publish(message)

    def remove_consumer(self, consumer: Consumer) -> None:
        was_consuming = consumer in self.consumers
        super().remove_consumer(consumer)
        queue = self.of
        if not was_consuming or self.deleted or queue.deleted or self.vhost.in_use(queue):
            return
        if queue.auto_delete:
            self.vhost.delete_queue(queue)
        else:
            queue.touch()  # x-expires counts from the last consumer of any class


def encode(message: Message) -> bytes:
    """The journal's bytes of a lane message: u32 length of a field table with its class,
    exchange, routing key, identifier, priority and properties, then the body."""
    assert isinstance(message, ClassMessage)
    properties = message.properties
    header = values.encode_table(
        {
            "class": message.content_class,
            "exchange": message.exchange,
            "routing-key": message.routing_key,
            "identifier": message.identifier,
            "priority": message.priority,
            "properties": properties if isinstance(properties, dict) else properties.present(),
        }
    )
    return _LENGTH.pack(len(header)) + header + message.body


def decode(data: bytes) -> ClassMessage:
    (length,) = _LENGTH.unpack_from(data)
    header, _ = values.decode_table(data, _LENGTH.size)
    content_class, properties = header["class"], header["properties"]
    if content_class != "message":  # the file and stream classes have properties classes
        properties = SPEC_0_9.properties(content_class)(**properties)
    return ClassMessage(
        content_class,
        header["exchange"],
        header["routing-key"],
        properties,
        data[_LENGTH.size + length :],
        priority=header["priority"],
        identifier=header["identifier"],
    )
