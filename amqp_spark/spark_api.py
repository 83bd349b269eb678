"""What the installed PySpark's Python Data Source API offers, found once, here.

The connector runs on PySpark 4.0 to 4.3 from one codebase. It asks what the API has, not
which version it is (measured; docs/pyspark-versions.md):

* ``ADMISSION_CONTROL``: ``pyspark.sql.streaming.datasource`` (4.2+). Spark then calls
  ``latestOffset(start, limit)`` with a ``ReadLimit``, ``getDefaultReadLimit`` and, for
  ``Trigger.AvailableNow``, ``prepareForTriggerAvailableNow`` of a
  ``SupportsTriggerAvailableNow``. Without it (4.0, 4.1) Spark calls ``latestOffset()``
  with no arguments, and runs an AvailableNow query as one batch (the source is never told
  which trigger runs); the source then applies its limits itself (``queue_stream``).
  Where it is missing, the module's names below are stand-ins that Spark never passes, so
  that the readers' code and types stay one.
* ``STREAM_ARROW_WRITER``: ``DataSourceStreamArrowWriter`` (4.1+), else
  ``DataSourceStreamWriter``, as ``StreamWriterBase``: without it the streaming sink takes
  rows (``amqp_spark.sink.writers``). ``DataSourceArrowWriter`` (batch) is in every
  supported PySpark.
* ``to_arrow_schema_utc``: Spark's ``to_arrow_schema`` changed its keywords in 4.2.

Importing this module imports PySpark; a missing or too old PySpark fails here with a
message that says what to install (``PYSPARK_MISSING``).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

#: The oldest PySpark with the Python Data Source API the connector needs.
OLDEST = "4.0"

PYSPARK_MISSING = (
    "amqp-spark's Data Source needs PySpark {oldest} or later (4.0 to 4.3 are supported), "
    "found {found}. On Databricks use a runtime with Spark 4.0 or later (17.3 LTS, 18 LTS, "
    "19, serverless); elsewhere install it beside the connector: pip install "
    "'amqp-spark[spark]' (or pip install 'pyspark>=4.0,<5'). The broker (amqp-broker) and "
    "the client (amqp_spark.client) do not need it."
)

try:
    import pyspark
except ImportError as e:
    raise ImportError(PYSPARK_MISSING.format(oldest=OLDEST, found="none")) from e
try:
    import pyspark.sql.datasource  # noqa: F401
    from pyspark.sql.types import StructType
except ImportError as e:  # a PySpark without the Python Data Source API (< 4.0)
    found = f"PySpark {pyspark.__version__}"
    raise ImportError(PYSPARK_MISSING.format(oldest=OLDEST, found=found)) from e

#: The installed PySpark's version, for messages and reports only: behaviour follows the
#: capabilities below.
PYSPARK_VERSION: str = pyspark.__version__


class _WithoutAdmissionControl:
    """Stands for ``pyspark.sql.streaming.datasource`` where PySpark lacks it (4.0, 4.1):
    Spark then passes no limit and never calls ``prepareForTriggerAvailableNow``, so these
    only keep the readers' code and types one."""

    class ReadLimit:
        pass

    class ReadAllAvailable(ReadLimit):
        pass

    @dataclass(frozen=True)
    class ReadMaxRows(ReadLimit):
        max_rows: int

    @dataclass(frozen=True)
    class ReadMaxBytes(ReadLimit):
        max_bytes: int

    @dataclass(frozen=True)
    class ReadMinRows(ReadLimit):
        min_rows: int

    class SupportsTriggerAvailableNow:
        pass


try:
    from pyspark.sql.streaming import datasource as _admission_control

    ADMISSION_CONTROL = True
except ImportError:  # PySpark 4.0, 4.1
    _admission_control = _WithoutAdmissionControl  # type: ignore[assignment]
    ADMISSION_CONTROL = False

ReadAllAvailable = _admission_control.ReadAllAvailable
ReadLimit = _admission_control.ReadLimit
ReadMaxBytes = _admission_control.ReadMaxBytes
ReadMaxRows = _admission_control.ReadMaxRows
ReadMinRows = _admission_control.ReadMinRows
SupportsTriggerAvailableNow = _admission_control.SupportsTriggerAvailableNow

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamWriterBase

    STREAM_ARROW_WRITER: bool
else:
    try:
        from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamWriterBase

        STREAM_ARROW_WRITER = True
    except ImportError:  # PySpark 4.0: the streaming sink takes rows
        from pyspark.sql.datasource import DataSourceStreamWriter as StreamWriterBase

        STREAM_ARROW_WRITER = False


@functools.cache
def _arrow_schema_takes_timezone() -> bool:
    from pyspark.sql.pandas.types import to_arrow_schema

    return "timezone" in inspect.signature(to_arrow_schema).parameters


def to_arrow_schema_utc(schema: StructType) -> pa.Schema:
    """Spark's Arrow schema of ``schema``, timestamps in UTC: what Spark compares a reader's
    record batches with. The keyword says so as ``timezone="UTC"`` from 4.2, as
    ``timestamp_utc=True`` (the default) before."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if _arrow_schema_takes_timezone():
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


__all__ = [
    "ADMISSION_CONTROL",
    "PYSPARK_VERSION",
    "STREAM_ARROW_WRITER",
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxBytes",
    "ReadMaxRows",
    "ReadMinRows",
    "StreamWriterBase",
    "SupportsTriggerAvailableNow",
    "to_arrow_schema_utc",
]
