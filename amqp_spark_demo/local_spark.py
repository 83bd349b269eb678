"""A local SparkSession for the demo, the quickstart notebook and the tests (not for
clusters: on Databricks ``spark`` already exists).

Bound to loopback (the driver would otherwise pick the first non-loopback interface), with
Python workers running this interpreter so they import the same installed package.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def local_session(
    app_name: str, scratch: Path | None = None, cores: int = 2, task_attempts: int = 1
) -> SparkSession:
    """``local[cores]`` on 127.0.0.1, UI off, UTC; Spark's files under ``scratch`` if given.
    A failed task fails its job unless ``task_attempts`` > 1 (``local[cores,attempts]``)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores},{task_attempts}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if scratch is not None:
        builder = (
            builder.config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
            .config("spark.local.dir", str(scratch / "local"))
            .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={scratch / 'derby'}")
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
