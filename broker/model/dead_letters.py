"""Dead-lettering: the copy of a message its queue let go, with the ``x-death`` history
RabbitMQ records (``dead_lettered``), and the rule that keeps it out of an automatic cycle
(``is_death_cycle``). The virtual host routes it (``VirtualHost.dead_letter``)."""

from __future__ import annotations

import datetime
from typing import Any

from .exchanges import BLIND_COPY_HEADER, COPY_HEADER, header_keys
from .message import Message

_UTC = datetime.timezone.utc
#: The ``x-death`` reason of a message whose queue a 0-9 queue.delete deleted (rule
#: queue.delete:01). Our extension: RabbitMQ drops such messages and has no such reason. Its
#: own reasons say what befell the message (rejected, expired) or which queue limit let it go
#: (maxlen, delivery_limit); this one says the queue went, in the snake case of theirs.
QUEUE_DELETED = "queue_deleted"


def is_death_cycle(deaths: list[dict[str, Any]], target: str) -> bool:
    """Whether a dead-lettered message whose ``x-death`` history is ``deaths`` (most recent
    first) must not go to the queue named ``target``: RabbitMQ drops a dead-lettered message
    that would return to a queue it already died in, unless a client rejected it somewhere
    along the way (then the loop is not automatic). Every dead-lettering path (basic queues,
    the 0-9 lanes) filters its target queues with it."""
    for death in deaths:
        if death.get("reason") == "rejected":
            return False
        if death.get("queue") == target:
            return True
    return False


def dead_lettered(
    message: Message, queue: str, reason: str, exchange: str, dead_letter_key: str | None
) -> Message:
    """A copy of ``message`` on its way to ``exchange``, its death recorded in the headers
    and its per-message expiration removed, as RabbitMQ 4.0 makes it: with the queue's
    ``dead_letter_key`` it is routed by that key alone, its ``CC`` header kept (3.10
    removed it); without one it keeps its routing key, ``CC`` header and ``BCC`` keys
    (``blind_keys``), which all route it again. ``x-death`` lists the routing key and the
    ``CC`` keys either way; ``x-first-death-*`` name the first death, ``x-last-death-*``
    (new in 4.0) this one."""
    props: Any = message.properties
    fields = props.fields()
    headers = dict(props.headers or {})
    routing_keys = [message.routing_key, *header_keys(headers, COPY_HEADER)]
    deaths: list[dict[str, Any]] = [
        dict(d) for d in headers.get("x-death") or [] if isinstance(d, dict)
    ]
    for i, death in enumerate(deaths):
        if death.get("queue") == queue and death.get("reason") == reason:
            death["count"] = int(death.get("count", 0)) + 1
            deaths.insert(0, deaths.pop(i))
            break
    else:
        death = {
            "count": 1,
            "reason": reason,
            "queue": queue,
            "time": datetime.datetime.now(_UTC).replace(microsecond=0),
            "exchange": message.exchange,
            "routing-keys": routing_keys,
        }
        if props.expiration is not None:
            death["original-expiration"] = props.expiration
        deaths.insert(0, death)
    headers["x-death"] = deaths
    headers.setdefault("x-first-death-reason", reason)
    headers.setdefault("x-first-death-queue", queue)
    headers.setdefault("x-first-death-exchange", message.exchange)
    headers["x-last-death-reason"] = reason
    headers["x-last-death-queue"] = queue
    headers["x-last-death-exchange"] = message.exchange
    if dead_letter_key is None:
        routing_key, blind_keys = message.routing_key, message.blind_keys
    else:
        routing_key, blind_keys = dead_letter_key, ()
        headers.pop(BLIND_COPY_HEADER, None)  # a basic message has none; 0-9 ones may
    fields["headers"] = headers
    fields["expiration"] = None
    props = type(props)(**fields)
    return Message(exchange, routing_key, props, message.body, blind_keys=blind_keys)
