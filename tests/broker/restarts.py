"""A broker a test can restart (the ``restartable`` fixture of ``conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pika


class Restartable:
    """A broker a test can restart: ``url`` and ``restart()``; ``bundled`` tells which."""

    def __init__(
        self, url: Callable[[], str], restart: Callable[[], None], *, bundled: bool
    ) -> None:
        self.url = url
        self.restart = restart
        self.bundled = bundled


def wait_until_on_disk(connection: pika.BlockingConnection) -> None:
    """Return once what the broker did for ``connection`` so far is on disk, ready for a
    kill -9: a persistent message published with confirms to a durable queue of its own
    (deleted after). Acks do not wait for the disk, on the bundled broker as on RabbitMQ: one
    sent right before a kill -9 may be lost, and its message comes back (at-least-once). The
    bundled broker journals acks in order with publishes, so a confirm comes after them."""
    channel = connection.channel()
    channel.confirm_delivery()
    queue = f"on-disk-{uuid.uuid4().hex[:12]}"
    channel.queue_declare(queue, durable=True)
    channel.basic_publish("", queue, b"", pika.BasicProperties(delivery_mode=2))
    channel.queue_delete(queue)
    channel.close()
