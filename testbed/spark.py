"""The SparkSession the tests share: starting a JVM costs 7-8 s, so there is one a run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from amqp_spark_demo.local_spark import local_session as _local_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def local_session(scratch: Path, task_attempts: int = 1) -> SparkSession:
    """A local[2] session on loopback with its files under ``scratch``; a task is tried
    ``task_attempts`` times before its job fails."""
    return _local_session("amqp-spark-tests", scratch, task_attempts=task_attempts)
