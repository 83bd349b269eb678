"""The management plane: RabbitMQ's management HTTP API, its Prometheus metrics and a web
console, served by aiohttp from the broker's own event loop (``ManagementServer``).

Handlers read and change the broker's model directly (they run on its loop, between two
AMQP reads); message rates come from samples of plain counters (``rates``), so that the hot
path pays a few integer increments and nothing else.
"""

from .server import ManagementPortError, ManagementServer

__all__ = ["ManagementPortError", "ManagementServer"]
