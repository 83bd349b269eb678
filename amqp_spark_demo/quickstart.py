"""The quickstart notebook's sample data and its count of what arrived
(notebooks/quickstart.ipynb), through the connector's client.

The queue ``quickstart.events`` holds JSON events; the exchange ``quickstart.by_kind``
routes a row by its routing key, the event's kind, to ``quickstart.clicks`` or
``quickstart.views``. Names of their own, since the notebook deletes and declares them on
the broker it is pointed at.

The connector takes the user name and password as options of their own (Spark redacts the
``password`` option in plans); the client takes them in its URL, made here and never shown.
"""

from __future__ import annotations

import json

from amqp_spark.client import connect
from amqp_spark.client.parameters import with_credentials

EVENTS = "quickstart.events"
EXCHANGE = "quickstart.by_kind"
BY_KIND = {"click": "quickstart.clicks", "view": "quickstart.views"}


def publish_events(
    uri: str, count: int, *, username: str | None = None, password: str | None = None
) -> None:
    """Declare the queues and the exchange afresh (what an earlier run left is deleted) and
    publish ``count`` events to ``quickstart.events``, every one confirmed: every other
    event a click, the others views."""
    with connect(with_credentials(uri, username, password)) as conn, conn.channel() as ch:
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
    with connect(with_credentials(uri, username, password)) as conn, conn.channel() as ch:
        return {
            queue: ch.queue_declare(queue, passive=True).message_count
            for queue in (EVENTS, *BY_KIND.values())
        }
