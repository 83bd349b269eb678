"""The shared SparkSession works and its Python workers run this venv's interpreter."""

import sys

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_python_workers_use_this_interpreter(spark: SparkSession) -> None:
    rdd = spark.sparkContext.parallelize(range(4), 2)
    used = rdd.map(lambda _: sys.executable).distinct().collect()
    assert used == [sys.executable]
