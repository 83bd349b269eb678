"""The quickstart notebook's sample data and its count of what arrived
(notebooks/quickstart.ipynb), through the connector's client.

The queue ``quickstart.events`` holds JSON events; the exchange ``quickstart.by_kind``
routes a row by its routing key, the event's kind, to ``quickstart.clicks`` or
``quickstart.views``. Names of their own, since the notebook deletes and declares them on
the broker it is pointed at.

The connector takes the user name and password as options of their own (Spark redacts the
``password`` option in plans); this client takes them in its URL, made here and never shown.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlsplit, urlunsplit

from amqp_spark.client import connect

EVENTS = "quickstart.events"
EXCHANGE = "quickstart.by_kind"
BY_KIND = {"click": "quickstart.clicks", "view": "quickstart.views"}


def client_url(uri: str, username: str | None = None, password: str | None = None) -> str:
    """``uri`` with ``username`` and ``password`` in it, where given (they replace the URI's)."""
    if username is None and password is None:
        return uri
    parts = urlsplit(uri)
    user = username if username is not None else parts.username or "guest"
    secret = password if password is not None else parts.password or "guest"
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"{quote(user, safe='')}:{quote(secret, safe='')}@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


def publish_events(
    uri: str, count: int, *, username: str | None = None, password: str | None = None
) -> None:
    """Declare the queues and the exchange afresh (what an earlier run left is deleted) and
    publish ``count`` events to ``quickstart.events``, every one confirmed: every other
    event a click, the others views."""
    with connect(client_url(uri, username, password)) as conn, conn.channel() as ch:
        ch.exchange_declare(EXCHANGE, "direct", durable=True)
        for kind, queue in {"": EVENTS, **BY_KIND}.items():
            ch.queue_delete(queue)
            ch.queue_declare(queue, durable=True)
            if kind:
                ch.queue_bind(queue, EXCHANGE, routing_key=kind)
        ch.confirm_select()
        for i in range(count):
            event = {"user": f"u{i % 10}", "kind": "click" if i % 2 else "view", "ms": i}
            properties = {"content_type": "application/json", "message_id": f"event-{i}"}
            ch.basic_publish("", EVENTS, json.dumps(event).encode(), properties)
        ch.wait_for_confirms(timeout=60)


def queue_depths(
    uri: str, *, username: str | None = None, password: str | None = None
) -> dict[str, int]:
    """The messages ready in each of the quickstart's queues."""
    with connect(client_url(uri, username, password)) as conn, conn.channel() as ch:
        return {
            queue: ch.queue_declare(queue, passive=True).message_count
            for queue in (EVENTS, *BY_KIND.values())
        }
