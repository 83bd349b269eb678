"""The headers that name a dead-lettered message's deaths: ``x-first-death-*`` keep the first
(queue, reason, exchange), ``x-last-death-*`` (RabbitMQ 4.0; 3.10 had none) name the latest,
on the bundled broker and RabbitMQ 4.0 (measured on 4.0.5)."""

from __future__ import annotations

from pika.adapters.blocking_connection import BlockingChannel

from .helpers import get_when_there


def test_last_death_headers_name_the_latest_death_and_first_death_ones_the_first(
    channel: BlockingChannel, name: str
) -> None:
    """a --rejected--> b (by the default exchange) --rejected--> c."""
    a, b, c = (f"{name}-{suffix}" for suffix in "abc")
    channel.queue_declare(c)
    channel.queue_declare(
        b, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": c}
    )
    channel.queue_declare(
        a, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": b}
    )
    channel.confirm_delivery()
    channel.basic_publish("", a, b"m")
    for queue in (a, b):
        method, _, _ = get_when_there(channel, queue)
        channel.basic_reject(method.delivery_tag, requeue=False)
    method, properties, _ = get_when_there(channel, c)
    channel.basic_ack(method.delivery_tag)
    deaths = {k: v for k, v in properties.headers.items() if k.startswith("x-") and k != "x-death"}
    assert deaths == {
        "x-first-death-queue": a,
        "x-first-death-reason": "rejected",
        "x-first-death-exchange": "",
        "x-last-death-queue": b,
        "x-last-death-reason": "rejected",
        "x-last-death-exchange": "",
    }
    assert [(d["queue"], d["count"]) for d in properties.headers["x-death"]] == [(b, 1), (a, 1)]
    for queue in (a, b, c):
        channel.queue_delete(queue)
