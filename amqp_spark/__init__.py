"""amqp-spark: a PySpark Data Source ``amqp`` for AMQP 0-9-1 brokers.

Importing this package stays light (no pyspark), so that the client (``amqp_spark.client``)
can be used without Spark. ``AMQPDataSource`` is imported on first access.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AMQPDataSource"]


def __getattr__(name: str) -> Any:
    if name == "AMQPDataSource":
        from amqp_spark.datasource import AMQPDataSource

        return AMQPDataSource
    raise AttributeError(f"module 'amqp_spark' has no attribute {name!r}")
