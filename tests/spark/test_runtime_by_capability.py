"""The connector decides by what the installed PySpark offers, never by its version string:
Databricks 15.4 LTS and 16.4 LTS say Spark 3.5 and have the Python Data Source API
(back-ported). A PySpark that says 3.5 but has the API must not be refused anywhere."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.spark]

#: In a fresh interpreter: PySpark claims 3.5.0, then every module of the connector is
#: imported and the options of both sides are parsed; prints the capabilities found.
_AS_SPARK_3_5 = textwrap.dedent(
    """
    import importlib, pkgutil
    import pyspark, pyspark.version
    pyspark.__version__ = pyspark.version.__version__ = "3.5.0"
    import amqp_spark, amqp_spark.spark_api as api
    for module in pkgutil.walk_packages(amqp_spark.__path__, "amqp_spark."):
        importlib.import_module(module.name)
    from amqp_spark.datasource import AMQPDataSource
    from amqp_spark.source.reader_choice import micro_batch_reader
    from amqp_spark.source.options import SourceOptions
    from amqp_spark.sink.settings import SinkSettings
    options = {"uri": "amqp://h/", "queue": "q", "checkpointLocation": "/tmp/ck"}
    micro_batch_reader(SourceOptions.parse(options))
    SinkSettings.parse({"uri": "amqp://h/"})
    print(api.PYSPARK_VERSION, api.ADMISSION_CONTROL, api.STREAM_ARROW_WRITER)
    """
)


def test_a_pyspark_that_says_3_5_but_has_the_api_is_not_refused() -> None:
    from amqp_spark import spark_api

    done = subprocess.run(
        [sys.executable, "-c", _AS_SPARK_3_5], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    capabilities = f"{spark_api.ADMISSION_CONTROL} {spark_api.STREAM_ARROW_WRITER}"
    assert done.stdout.split() == ["3.5.0", *capabilities.split()]
