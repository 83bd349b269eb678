"""The management plane: RabbitMQ's management HTTP API, its Prometheus metrics and a web
console, served by aiohttp from the broker's own event loop (``ManagementServer``).

Handlers read and change the broker's model directly (they run on its loop, between two
AMQP reads); message rates come from samples of plain counters (``rates``), so that the hot
path pays a few integer increments and nothing else.

The listener (``server.ManagementServer``) and everything under it (aiohttp, the Prometheus
client: 162 modules and 17,000 objects the garbage collector tracks) are imported only where
a listener starts, so that a broker run with ``--no-management``, or embedded in a test,
does not carry them.
"""

from .port_error import ManagementPortError

__all__ = ["ManagementPortError"]
