"""A pytest plugin: every test that starts the SparkSession carries the ``spark`` mark.

CI runs ``pytest -m spark`` and ``pytest -m 'not spark'`` side by side; a test that uses the
``spark`` fixture without the mark would run in the second job and start a second Spark
session beside the first job's, on the same two cores. The check runs before ``-m``
deselects anything, so an unmarked test fails every run, whatever its mark filter."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before -m deselects: a missing mark fails every run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fail the run, naming them, if tests use the ``spark`` fixture without the mark."""
    unmarked = [
        item.nodeid
        for item in items
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "these tests use the 'spark' fixture but lack @pytest.mark.spark: "
            + ", ".join(unmarked)
        )
