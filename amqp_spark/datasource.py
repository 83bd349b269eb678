"""``AMQPDataSource``: the PySpark Data Source named ``amqp``."""

from __future__ import annotations

from typing import TYPE_CHECKING

# isort: off
import amqp_spark.spark_api  # noqa: F401  first: without a usable PySpark, says what to install

# isort: on
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from amqp_spark.schema import DDL

if TYPE_CHECKING:
    from amqp_spark.source.options import SourceOptions


class AMQPDataSource(DataSource):
    """Reads AMQP queues as streaming or batch DataFrames; writes DataFrames to exchanges.

    The schema is fixed (see ``amqp_spark.schema``). Source options are parsed and checked
    in ``schema()``, which Spark calls at ``load()`` of reads and streams (never for writes,
    measured), so a bad option fails there.
    """

    @classmethod
    def name(cls) -> str:
        return "amqp"

    def schema(self) -> str:
        self._source_options(warn=True)  # at load(): once per read or stream
        return DDL

    def _source_options(self, warn: bool = False) -> SourceOptions:
        from amqp_spark.source.options import SourceOptions

        return SourceOptions.parse(self.options, warn=warn)

    def reader(self, schema: StructType) -> DataSourceReader:
        from amqp_spark.source.batch import AMQPBatchReader

        return AMQPBatchReader(self._source_options())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from amqp_spark.source.reader_choice import micro_batch_reader

        return micro_batch_reader(self._source_options())

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from amqp_spark.sink import make_batch_writer

        return make_batch_writer(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from amqp_spark.sink import make_stream_writer

        return make_stream_writer(self.options, schema)


def register(spark: SparkSession) -> None:
    """Make ``format("amqp")`` available in ``spark`` (a classic or a Spark Connect session).

    Registers :class:`AMQPDataSource` unless Spark already registered it from the installed
    ``pyspark_amqp`` module: PySpark 4.0 refuses to register a name over those
    (``DATA_SOURCE_ALREADY_EXISTS``, measured), later versions replace it silently. Either
    way the source is then there.
    """
    try:
        spark.dataSource.register(AMQPDataSource)
    except PySparkException as e:
        if e.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise
