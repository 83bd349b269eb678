"""Spark's own floor for a Python streaming source: what Spark takes from a source that does
nothing, measured beside the ``amqp`` source.

``format("python-source-floor")`` with the option ``rows`` yields that many 100-byte rows
(schema ``body binary``) in micro-batches of ``rows_per_batch`` (default 40,000), each cut in
two partitions whose rows the executors make from nothing: no broker, no decoding, and no
rows in the partitions, so none cross the driver's JVM. It supports ``Trigger.AvailableNow``
(the run ends after the last row) so that it runs exactly as the source's benchmark runs the
``amqp`` source. As /work/shared/bench/python_source_floor.py measured it for issue 35.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from amqp_spark.spark_api import ReadLimit, SupportsTriggerAvailableNow

BODY = bytes(range(100))
ROWS_PER_BATCH = 40_000


class _Rows(InputPartition):
    """``count`` rows for an executor to make."""

    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.count = count


class FloorReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, rows: int, rows_per_batch: int) -> None:
        self.rows, self.rows_per_batch = rows, rows_per_batch
        self._last = 0  #: where the next batch starts when Spark passes no start (4.0, 4.1)

    def initialOffset(self) -> dict[str, int]:
        return {"n": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        """Every run reads ``rows`` rows: nothing to fix at its start."""

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, int]:
        base = start["n"] if start else self._last
        self._last = min(self.rows, base + self.rows_per_batch)
        return {"n": self._last}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        n = end["n"] - start["n"]
        return [_Rows(n // 2), _Rows(n - n // 2)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Rows)
        yield pa.RecordBatch.from_arrays(
            [pa.array([BODY] * partition.count, pa.binary())], names=["body"]
        )

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to acknowledge."""


class PythonSourceFloor(DataSource):
    """``format("python-source-floor").option("rows", N)``."""

    @classmethod
    def name(cls) -> str:
        return "python-source-floor"

    def schema(self) -> str:
        return "body binary"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options: dict[str, Any] = dict(self.options)
        return FloorReader(int(options["rows"]), int(options.get("rows_per_batch", ROWS_PER_BATCH)))
