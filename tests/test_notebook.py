"""The quickstart notebook runs top to bottom against the embedded broker, on every supported
PySpark (marker ``versions``: scripts/test-pyspark-versions.sh runs it in each older one's
venv), so it never rots. The notebook asserts its own counts; this test reads them too."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "quickstart.ipynb"


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.versions
@pytest.mark.timeout(900)
def test_quickstart_notebook_reads_a_queue_into_a_table_and_every_message_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.delenv("AMQP_URI", raising=False)  # the notebook must start its own broker
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )

    client.execute()

    outputs = "".join(
        out.get("text", "") for cell in notebook.cells for out in cell.get("outputs", [])
    )
    assert "1000 published to quickstart.events; 0 left there" in outputs
    assert "1000 rows in amqp_quickstart_events (1000 distinct message ids)" in outputs
    assert "500 clicks routed to quickstart.clicks" in outputs
    assert "500 views routed to quickstart.views" in outputs
    assert "every message accounted for" in outputs
