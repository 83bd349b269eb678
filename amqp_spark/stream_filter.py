"""Stream filtering (RabbitMQ 3.13+) as both ends of the connector use it.

The sink sets the header ``x-stream-filter-value`` on each message; the source passes
``x-stream-filter`` and ``x-stream-match-unfiltered`` when it consumes a stream queue over
AMQP 0-9-1 (``filter.N`` and ``match-unfiltered`` when it subscribes over the stream
protocol), and checks every message again by that header: the broker filters by chunk with
a Bloom filter, so it may deliver messages that do not match (those sharing a chunk with a
match, or a false positive), and RabbitMQ before 3.13 ignores the filter and delivers
everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from amqp_spark.server_product import product_and_version

FILTER_VALUE_HEADER = "x-stream-filter-value"


@dataclass(frozen=True)
class StreamFilter:
    """The filter values a reader wants, and whether it wants messages without one."""

    values: tuple[str, ...]
    match_unfiltered: bool = False

    def consume_arguments(self) -> dict[str, Any]:
        return {
            "x-stream-filter": list(self.values),
            "x-stream-match-unfiltered": self.match_unfiltered,
        }

    def subscribe_properties(self) -> dict[str, str]:
        """The same filter as the properties of a stream-protocol ``Subscribe`` (RabbitMQ's
        ``filter.N`` and ``match-unfiltered``)."""
        properties = {f"filter.{i}": value for i, value in enumerate(self.values)}
        properties["match-unfiltered"] = "true" if self.match_unfiltered else "false"
        return properties

    def keeps(self, properties: Any) -> bool:
        """Whether a delivery with these content properties matches (the check after the
        broker's)."""
        return self.keeps_headers(properties.headers)

    def keeps_headers(self, headers: Mapping[str, Any] | None) -> bool:
        """Whether a message with these headers matches."""
        value = headers.get(FILTER_VALUE_HEADER) if headers else None
        if value is None:
            return self.match_unfiltered
        return value in self.values


def rabbitmq_without_filtering(server_properties: Mapping[str, Any]) -> str | None:
    """The version of a RabbitMQ older than 3.13 (it ignores the filter arguments and
    delivers everything), None for any other server."""
    product, version = product_and_version(server_properties)
    if product != "RabbitMQ" or version is None:
        return None
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    return version if (major, minor) < (3, 13) else None
