"""``format("amqp")`` is found without ``register()`` after ``pip install``, ``register()``
works too, and importing the package stays light."""

from __future__ import annotations

import os
import subprocess
import sys
from pkgutil import iter_modules

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource

from amqp_spark.datasource import AMQPDataSource
from amqp_spark.schema import COLUMN_NAMES


def test_spark_lookup_finds_pyspark_amqp_default_source() -> None:
    # What pyspark.sql.worker.lookup_data_sources does at session start. An editable install
    # through an import hook (setuptools' default "strict"/finder mode) is invisible to it:
    # install with `pip install -e . --config-settings editable_mode=compat`.
    assert "pyspark_amqp" in {m.name for m in iter_modules()}
    import pyspark_amqp

    assert issubclass(pyspark_amqp.DefaultSource, DataSource)
    assert pyspark_amqp.DefaultSource.name() == "amqp"


def test_importing_amqp_spark_does_not_import_pyspark() -> None:
    code = (
        "import sys, amqp_spark, amqp_spark.source.offsets, amqp_spark.schema;"
        "assert 'pyspark' not in sys.modules, 'pyspark imported';"
        "print(amqp_spark.AMQPDataSource.name())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "amqp"


def test_format_amqp_resolves_in_a_fresh_session_without_register(tmp_path: object) -> None:
    """What a user gets after ``pip install``: a new Python, outside the checkout, whose
    SparkSession resolves format("amqp") through pyspark_amqp alone."""
    code = (
        "from pyspark.sql import SparkSession;"
        "s = SparkSession.builder.master('local[1]').config('spark.ui.enabled','false')"
        ".config('spark.driver.host','127.0.0.1').getOrCreate();"
        "df = s.read.format('amqp').option('uri','amqp://127.0.0.1:1/').option('queue','q').load();"
        "print(','.join(df.columns[:3])); s.stop()"
    )
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": "",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=str(tmp_path),
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "body,routing_key,exchange"


@pytest.mark.spark
def test_register_makes_a_data_source_class_available_under_its_name(spark: SparkSession) -> None:
    """``spark.dataSource.register`` (a Databricks notebook's way), shown with a subclass
    under a name no auto-registration knows."""

    class Registered(AMQPDataSource):
        @classmethod
        def name(cls) -> str:
            return "amqp_registered"

    spark.dataSource.register(Registered)
    df = spark.read.format("amqp_registered").options(uri="amqp://127.0.0.1:1/", queue="q")

    assert df.load().columns == list(COLUMN_NAMES)
