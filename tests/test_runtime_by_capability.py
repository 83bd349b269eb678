"""The connector decides by what the installed PySpark offers, never by its version number:
Databricks 15.4 LTS and 16.4 LTS run Spark 3.5 with the Python Data Source API back-ported,
and a version check would refuse them. Here a PySpark whose version string says 3.5 (set in
a fresh interpreter before anything reads it) builds the source's readers and the sink's
writers as on its real version."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SAYS_3_5 = textwrap.dedent(
    """
    import pyspark, pyspark.version
    pyspark.__version__ = pyspark.version.__version__ = "3.5.2"

    import pyspark_amqp
    from amqp_spark import spark_api
    from amqp_spark.schema import spark_schema
    from pyspark.sql.datasource import (
        DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter, DataSourceWriter,
    )

    source = pyspark_amqp.DefaultSource({"uri": "amqp://broker.example/%2F", "queue": "q"})
    schema = spark_schema()
    assert source.schema()
    assert isinstance(source.reader(schema), DataSourceReader)
    assert isinstance(source.streamReader(schema), DataSourceStreamReader)
    sink = pyspark_amqp.DefaultSource({"uri": "amqp://broker.example/%2F", "routingKey": "q"})
    assert isinstance(sink.writer(schema, False), DataSourceWriter)
    assert isinstance(sink.streamWriter(schema, False), DataSourceStreamWriter)
    print(spark_api.PYSPARK_VERSION)
    """
)


def test_a_pyspark_whose_version_says_3_5_but_has_the_api_is_not_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SAYS_3_5], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3.5.2"
