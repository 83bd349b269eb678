"""Contents of the 0-9 content classes (file, stream, message) in a queue.

Rule ``queue:any-content``: any content class may be sent to any queue and is queued and
delivered independently of the others. Each (queue, content class) pair other than basic
gets its own *lane*: a private ``Queue`` object that shares the real queue's virtual host
but holds only that class's messages and consumers. Routing finds the real queue; the
content goes to its lane. Basic content keeps using the real queue untouched, so 0-9-1
traffic never sees the lanes.

A lane takes the real queue's limits (``LIMIT_ARGUMENTS``: delivery limit, length limits,
overflow mode, dead-letter exchange); what it dead-letters goes, with RabbitMQ's ``x-death``
headers (a message-class message: in its application-headers), to the lanes of the same
content class of the dead-letter exchange's queues.

The store learns the three classes from ``register_contents``, which the server calls (through
``Spec09Dialect.register_contents``) before it recovers the journal.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from amqp_protocol import SPEC_0_9, SPEC_0_9_1

from ...model.dead_letters import QUEUE_DELETED, dead_lettered
from ...model.message import Message, with_headers
from ...model.queues import Queue
from ...model.vhost import VirtualHost
from ...store.message_codec import CONTENT_CODECS, ContentCodec
from ...store.persistence import CONTENT_RESTORERS
from .lane_queue import JOURNALED, Lane, decode, encode

#: Ten priority levels (0-9): the file, stream and message classes require at least two.
_LANE_ARGUMENTS = {"x-max-priority": 9}
#: The real queue's arguments its lanes apply to their own messages too.
LIMIT_ARGUMENTS = (
    "x-delivery-limit",
    "x-max-length",
    "x-max-length-bytes",
    "x-overflow",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
)
_BASIC_PROPERTIES = SPEC_0_9_1.properties("basic")


def lane(vhost: VirtualHost, queue: Queue, content_class: str) -> Queue:
    """The lane holding ``content_class`` messages of ``queue``, a queue of ``vhost``
    (created on first use; the file and message lanes of a durable queue are journaled, see
    lane_queue)."""
    by_class = vhost.lanes.setdefault(queue, {})
    found = by_class.get(content_class)
    if found is None:
        arguments = {
            **_LANE_ARGUMENTS,
            **{k: v for k, v in queue.arguments.items() if k in LIMIT_ARGUMENTS},
        }
        dead_letter = functools.partial(_dead_letter, vhost, content_class)
        found = Lane(vhost, queue, content_class, arguments, dead_letter)
        by_class[content_class] = found
    return found


def _dead_letter(
    vhost: VirtualHost, content_class: str, source: Queue, message: Message, reason: str
) -> None:
    """A lane lets ``message`` go: a copy with the death recorded as RabbitMQ records it
    (``dead_lettered``) goes to the ``content_class`` lanes of the queues the dead-letter
    exchange routes it to. Stream content pending on a deleted queue is not kept (see
    declarations: rule queue.delete:01)."""
    settings = source.settings
    dlx = vhost.exchanges.get(settings.dead_letter_exchange or "")
    if settings.dead_letter_exchange is None or dlx is None:
        return
    if content_class == "stream" and reason == QUEUE_DELETED:
        return
    # dead_lettered reads basic properties: only the headers matter here.
    basic = _BASIC_PROPERTIES(headers=message.headers)
    as_basic = Message(message.exchange, message.routing_key, basic, b"")
    as_dead = dead_lettered(
        as_basic, source.name, reason, dlx.name, settings.dead_letter_routing_key
    )
    dead = _with_death(message, as_dead.headers, dlx.name, as_dead.routing_key)
    key_alone = settings.dead_letter_routing_key is not None
    for target in vhost.route_dead_lettered(dlx, as_dead, key_alone=key_alone):
        lane(vhost, target, content_class).publish(dead)


def _with_death(message: Message, headers: dict[str, Any], exchange: str, key: str) -> Message:
    """A copy of ``message`` whose headers are ``headers``, on its way to ``exchange`` with
    routing key ``key``. A message-class message keeps its headers, exchange and routing key
    among its properties (message.transfer's fields), where its deliveries show them."""
    properties = message.properties
    if isinstance(properties, dict):
        dead = copy.copy(message)
        dead.properties = {
            **properties,
            "application_headers": headers,
            "exchange": exchange,
            "routing_key": key,
        }
    else:
        dead = with_headers(message, headers, replace=True)
    dead.readdress(exchange, key)
    return dead


def lane_totals(vhost: VirtualHost, queue: Queue) -> tuple[int, int]:
    """Messages and consumers of ``queue``, a queue of ``vhost``, over every content class."""
    lanes = vhost.lanes_of(queue)
    return (
        queue.message_count + sum(q.message_count for q in lanes),
        queue.consumer_count + sum(q.consumer_count for q in lanes),
    )


def restore(vhost: VirtualHost, queue: Queue, msg_id: int, data: bytes) -> None:
    """Recovery: put a journaled lane message back in its lane of ``queue``."""
    message = decode(data)
    message.msg_id = msg_id
    lane(vhost, queue, message.content_class).restore(message)


def register_contents() -> None:
    """Tell the store how to encode the file, stream and message classes' messages (journal,
    spilling) and how recovery puts a journaled one back in its lane."""
    for class_id in JOURNALED.values():
        CONTENT_RESTORERS[class_id] = restore
    codec = ContentCodec(encode, decode)
    for content_class in ("file", "stream", "message"):
        CONTENT_CODECS[SPEC_0_9.classes[content_class].class_id] = codec
