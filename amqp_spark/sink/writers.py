"""The Spark-facing writers: batch (``df.write``) and streaming (``df.writeStream``).

They are built in a planning worker on the driver, where options and the DataFrame's
schema are checked (so mistakes fail the query at start), then pickled to the executors,
where ``write()`` publishes one partition and returns only once the broker confirmed it.

Both take Arrow record batches, except the streaming writer on a PySpark without
``DataSourceStreamArrowWriter`` (4.0; ``amqp_spark.spark_api``): there Spark hands it
``Row`` objects, which it turns into record batches of the DataFrame's Arrow schema first,
so that what is published, and how, is the same.
"""

from __future__ import annotations

import datetime
import itertools
import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from amqp_spark.spark_api import STREAM_ARROW_WRITER, StreamWriterBase, to_arrow_schema_utc

from .columns import ColumnPlan, plan_columns
from .messages import MessageIds, to_messages
from .publisher import PartitionPublisher
from .settings import SinkSettings
from .stream_writer import publish_to_streams

log = logging.getLogger(__name__)

#: Options Spark itself adds to a streaming write; they are not the sink's.
SPARK_STREAM_OPTIONS = ("checkpointLocation", "queryName")

#: Local property Spark sets on a streaming query's tasks: the query's id, which survives
#: restarts from the same checkpoint (the run id does not).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"

#: Rows per record batch when the writer is given rows (see the module docstring).
ROWS_PER_BATCH = 4096


@dataclass
class PublishedPartition(WriterCommitMessage):
    """What one task confirmed."""

    partition: int
    messages: int


class _Publishing:
    """What both writers do: check at start, publish a partition in ``write()``."""

    def __init__(self, options: Mapping[str, str], schema: Any) -> None:
        self.settings = SinkSettings.parse(options, warn=True)  # made once per write
        self.plan: ColumnPlan = plan_columns(schema, self.settings)

    def _publish_partition(
        self, batches: Iterator[pa.RecordBatch], query: str, batch_id: int
    ) -> PublishedPartition:
        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        ids = MessageIds(query, batch_id, partition)
        where = f"partition {partition} of batch {batch_id} of {query}"
        if self.settings.over_stream_protocol:
            written = publish_to_streams(batches, self.plan, self.settings, ids, where)
            return PublishedPartition(partition, written)
        publisher = PartitionPublisher(self.settings, where)
        row = 0
        for batch in batches:
            publisher.publish(to_messages(batch, self.plan, self.settings, ids, row))
            row += batch.num_rows
        return PublishedPartition(partition, publisher.finish())


class AMQPBatchWriter(_Publishing, DataSourceArrowWriter):
    """``df.write.format("amqp")``: the ids' query part is a fresh UUID per write, fixed
    when the writer is built, so a retried task reuses its ids."""

    def __init__(self, options: Mapping[str, str], schema: Any) -> None:
        super().__init__(options, schema)
        self.write_id = str(uuid.uuid4())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishedPartition:
        return self._publish_partition(iterator, self.write_id, 0)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("amqp sink: write %s published %d message(s)", self.write_id, _total(messages))


class AMQPStreamWriter(_Publishing, StreamWriterBase):
    """``df.writeStream.format("amqp")``: a micro-batch is committed by Spark only when
    every task's messages were confirmed; ids are (query id, batch id, partition, row)."""

    def __init__(self, options: Mapping[str, str], schema: Any) -> None:
        own = {k: v for k, v in options.items() if k.lower() not in _SPARK_STREAM_KEYS}
        super().__init__(own, schema)
        #: Where Spark hands rows: the record batches they are turned into.
        self.arrow_schema = None if STREAM_ARROW_WRITER else to_arrow_schema_utc(schema)

    def write(self, iterator: Iterator[pa.RecordBatch] | Iterator[Row]) -> PublishedPartition:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("amqp sink: write() must run in a Spark task")
        query = context.getLocalProperty(QUERY_ID_PROPERTY) or "unknown-query"
        batch_id = int(context.getLocalProperty(BATCH_ID_PROPERTY) or 0)
        if self.arrow_schema is not None:
            iterator = record_batches(iterator, self.arrow_schema)
        return self._publish_partition(iterator, query, batch_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("amqp sink: batch %d published %d message(s)", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning(
            "amqp sink: batch %d aborted after %d confirmed message(s); it will be retried "
            "and its messages published again under the same ids (which a stream written "
            "over the stream protocol drops)",
            batchId,
            _total(messages),
        )


_SPARK_STREAM_KEYS = {k.lower() for k in SPARK_STREAM_OPTIONS}


def record_batches(rows: Iterator[Row], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``rows`` as record batches of ``schema`` (the DataFrame's, in its column order).

    A ``TimestampType`` value of a Row is naive and in the worker's local time (PySpark's
    conversion); Arrow's is in UTC, so it is converted (a naive ``astimezone`` reads it as
    local time). ``timestamp_ntz`` values have no zone and stay as they are.
    """
    while chunk := list(itertools.islice(rows, ROWS_PER_BATCH)):
        columns = []
        for i, field in enumerate(schema):
            values = [row[i] for row in chunk]
            if pa.types.is_timestamp(field.type) and field.type.tz is not None:
                values = [v if v is None else v.astimezone(datetime.timezone.utc) for v in values]
            columns.append(pa.array(values, type=field.type))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _total(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.messages for m in messages if isinstance(m, PublishedPartition))
