"""Which server the connector talks to, from ``connection.start``'s server properties (what
RabbitMQ does differently from the bundled broker is measured, and keyed on this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def product_and_version(server_properties: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The announced ``product`` and ``version`` (None where missing or not text)."""
    found = []
    for key in ("product", "version"):
        value = server_properties.get(key)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        found.append(value if isinstance(value, str) else None)
    return found[0], found[1]


def is_rabbitmq(server_properties: Mapping[str, Any]) -> bool:
    return product_and_version(server_properties)[0] == "RabbitMQ"
