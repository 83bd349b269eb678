"""Quorum queues' delivery limit: how the source keeps it from causing silent loss.

A query that fails and restarts returns its unacked batch to the queue each time (the
broker counts a return of each message in ``x-delivery-count``). RabbitMQ 4 gives every
quorum queue a delivery limit of 20 unless ``x-delivery-limit`` (or a policy) says
otherwise; past it the broker drops the message, or dead-letters it when the queue has a
dead-letter exchange. AMQP 0-9-1 cannot read a queue's arguments, so the source says so at
start for every quorum queue it reads, and counts the redelivered messages it receives
(``reportLatestOffset``: ``redelivered`` per queue).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("amqp_spark.source")

#: RabbitMQ 4's delivery limit of a quorum queue declared without ``x-delivery-limit``.
RABBITMQ_4_DEFAULT_LIMIT = 20


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value or "")


def delivery_limit_warning(queues: Sequence[str], server_properties: Mapping[str, Any]) -> str:
    """What the source logs when it starts reading the quorum queues ``queues`` on the
    broker that sent ``server_properties`` (connection.start)."""
    product, version = (
        _text(server_properties.get("product")),
        _text(server_properties.get("version")),
    )
    major = version.split(".", 1)[0]
    if product == "RabbitMQ" and major.isdigit() and int(major) < 4:
        limit = (
            f"{product} {version} applies a delivery limit only where x-delivery-limit (or a "
            "policy's delivery-limit) sets one"
        )
    else:  # RabbitMQ 4 and later, and brokers following it (the bundled one)
        limit = (
            f"{product} {version} gives a quorum queue a delivery limit of "
            f"{RABBITMQ_4_DEFAULT_LIMIT} unless x-delivery-limit (or a policy's delivery-limit) "
            "says otherwise"
        )
    return (
        f"amqp source: quorum queue(s) {', '.join(repr(q) for q in queues)}: {limit}. Each "
        "failed and restarted run of this query returns its unacked batch once; a message "
        "returned more often than the limit is dropped, or dead-lettered when the queue has a "
        "dead-letter exchange. To lose none, give the queue a dead-letter exchange or a "
        "delivery-limit of -1 (no limit). Redelivered messages are counted in the source's "
        "progress (latestOffset 'redelivered')."
    )


def warn_about_delivery_limit(queues: Sequence[str], server_properties: Mapping[str, Any]) -> None:
    log.warning("%s", delivery_limit_warning(queues, server_properties))
