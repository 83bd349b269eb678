"""The fixed schema of the ``amqp`` source, which is also what the sink accepts.

A row read by the source can be written back by the sink unchanged. Kept free of pyspark
imports at module level so the broker and the client never pull pyspark in.
"""

from __future__ import annotations

from typing import Any

#: Content properties of the basic class carried as string columns (AMQP shortstr).
STRING_PROPERTIES: tuple[str, ...] = (
    "content_type",
    "content_encoding",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "type",
    "user_id",
    "app_id",
)

#: (column, Spark SQL type, nullable) in order.
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("body", "binary", False),
    ("routing_key", "string", True),
    ("exchange", "string", True),
    ("queue", "string", True),
    ("delivery_tag", "bigint", True),
    ("redelivered", "boolean", True),
    ("offset", "bigint", True),  # stream position; null for classic queues
    ("timestamp", "timestamp", True),  # the timestamp property
    ("content_type", "string", True),
    ("content_encoding", "string", True),
    ("delivery_mode", "int", True),
    ("priority", "int", True),
    ("correlation_id", "string", True),
    ("reply_to", "string", True),
    ("expiration", "string", True),
    ("message_id", "string", True),
    ("type", "string", True),
    ("user_id", "string", True),
    ("app_id", "string", True),
    ("headers", "map<string,string>", True),  # values rendered as strings
)

COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _, _ in COLUMNS)

#: The schema as a DDL string (what ``DataSource.schema()`` returns).
DDL: str = ", ".join(
    f"`{name}` {sql_type}{'' if nullable else ' NOT NULL'}" for name, sql_type, nullable in COLUMNS
)


def spark_schema() -> Any:
    """The schema as a ``pyspark.sql.types.StructType`` (imports pyspark; needs no session)."""
    from pyspark.sql import types as T

    sql_types = {
        "binary": T.BinaryType(),
        "string": T.StringType(),
        "bigint": T.LongType(),
        "int": T.IntegerType(),
        "boolean": T.BooleanType(),
        "timestamp": T.TimestampType(),
        "map<string,string>": T.MapType(T.StringType(), T.StringType()),
    }
    return T.StructType(
        [T.StructField(name, sql_types[sql], nullable) for name, sql, nullable in COLUMNS]
    )


def arrow_schema() -> Any:
    """The Arrow schema ``read()`` must yield record batches in (it must match exactly)."""
    from amqp_spark.spark_api import to_arrow_schema_utc

    return to_arrow_schema_utc(spark_schema())
