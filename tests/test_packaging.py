"""Installing the project never replaces the user's PySpark, and what does not need Spark
does not import it (README, Install). The pip check runs in every PySpark's venv too
(marker ``versions``: scripts/test-pyspark-versions.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_the_broker_the_protocol_and_the_client_import_no_pyspark() -> None:
    done = python(
        "import sys, broker, broker.cli, amqp_protocol, amqp_spark, amqp_spark.client\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_data_source_without_pyspark_says_what_to_install() -> None:
    done = python("import sys\nsys.modules['pyspark'] = None  # no PySpark\nimport pyspark_amqp")

    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: amqp-spark's Data Source needs PySpark 4.0 or later")
    assert "found none" in last and "pip install 'amqp-spark[spark]'" in last


@pytest.mark.versions
@pytest.mark.slow
@pytest.mark.parametrize("extra", ["", "[spark]"])
def test_installing_the_project_keeps_the_installed_pyspark(extra: str) -> None:
    """What ``pip install`` of the project (with or without the ``spark`` extra) would
    install next to this venv's PySpark: never another PySpark."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-"]
        + ["--disable-pip-version-check", f"{ROOT}{extra}"],
        capture_output=True,
        text=True,
        timeout=280,
    )

    assert done.returncode == 0, done.stderr
    would_install = {
        item["metadata"]["name"].lower() for item in json.loads(done.stdout)["install"]
    }
    assert "amqp-spark" in would_install
    assert "pyspark" not in would_install
