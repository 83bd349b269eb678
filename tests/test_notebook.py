"""The quickstart notebook runs top to bottom against the embedded broker, so it never rots."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "quickstart.ipynb"


@pytest.mark.spark
@pytest.mark.slow
def test_quickstart_notebook_runs_and_routes_every_click(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    env_before = os.environ.pop("AMQP_URI", None)  # the notebook must start its own broker
    try:
        client = NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp_path)}},
        )
        os.environ["PYSPARK_PYTHON"] = sys.executable
        client.execute()
    finally:
        if env_before is not None:
            os.environ["AMQP_URI"] = env_before
    outputs = "".join(
        out.get("text", "") for cell in notebook.cells for out in cell.get("outputs", [])
    )
    assert "500 clicks routed to events.clicks; 0 messages left on events" in outputs
