"""amqp-spark: a PySpark Data Source ``amqp`` for AMQP 0-9-1 brokers.

Importing this package stays light (no pyspark), so that the client (``amqp_spark.client``)
can be used without Spark. ``AMQPDataSource`` and ``register`` are imported on first access.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AMQPDataSource", "register"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from amqp_spark import datasource

        return getattr(datasource, name)
    raise AttributeError(f"module 'amqp_spark' has no attribute {name!r}")
