"""The ``amqp`` sink: ``df.write.format("amqp")`` and ``df.writeStream.format("amqp")``.

``AMQPDataSource.writer()`` / ``streamWriter()`` delegate here. The writers are built on
the driver, where the options and the DataFrame's schema are checked, so mistakes fail
the query at start. See docs/sink.md for options, columns and the delivery guarantee.

pyspark is imported only when a writer is built: importing ``amqp_spark`` stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter


def make_batch_writer(options: Mapping[str, str], schema: Any) -> DataSourceArrowWriter:
    """The writer of ``df.write``; ``schema`` is the DataFrame's ``StructType``."""
    from .writers import AMQPBatchWriter

    return AMQPBatchWriter(options, schema)


def make_stream_writer(options: Mapping[str, str], schema: Any) -> DataSourceStreamWriter:
    """The writer of ``df.writeStream``; ``schema`` is the DataFrame's ``StructType``."""
    from .writers import AMQPStreamWriter

    return AMQPStreamWriter(options, schema)


__all__ = ["make_batch_writer", "make_stream_writer"]
