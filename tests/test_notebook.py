"""The quickstart notebook runs top to bottom, so it never rots: as it runs locally (the
embedded broker, a local session it starts and stops) on every supported PySpark (marker
``versions``: scripts/test-pyspark-versions.sh runs it in each older one's venv), and as a
Databricks notebook runs it, given ``spark`` and ``dbutils`` (widgets), on the newest. The
notebook asserts its own counts; the tests read them too."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat import NotebookNode

from broker import Broker

ROOT = Path(__file__).parents[1]
PASSWORD = "s3cr3t-Ω"  # a broker user's, read from the secret scope
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"

# What a Databricks notebook has before its first cell: a `spark` and a `dbutils`, whose
# widgets return what the user typed in (here `typed`), else the notebook's defaults, and
# whose secret scope "amqp" holds the broker user's password.
GIVEN = """
from pathlib import Path
from amqp_spark_demo.local_spark import local_session

spark = local_session("given", Path({scratch!r}))


class Widgets:
    def __init__(self, typed):
        self.typed, self.made = typed, {{}}

    def text(self, name, default):
        self.made[name] = default

    def get(self, name):
        return self.typed.get(name, self.made[name])


class Secrets:
    def get(self, scope, key):
        return {secrets!r}[scope][key]


class DbUtils:
    widgets = Widgets({typed!r})
    secrets = Secrets()


dbutils = DbUtils()
"""

# After the notebook: the session it was given still runs; no embedded broker was started.
AFTER = """
assert spark.range(3).count() == 3
assert "embedded" not in globals()
print("widgets:", sorted(dbutils.widgets.made))
"""


@pytest.fixture(autouse=True)
def kernel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``AMQP_URI`` (the notebook takes its broker from the widgets, else starts its own);
    Spark's Python workers run this Python."""
    monkeypatch.delenv("AMQP_URI", raising=False)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)


def run(notebook: NotebookNode, cwd: Path) -> str:
    """Execute ``notebook`` in a kernel of this Python; its cells' printed text."""
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return "".join(
        out.get("text", "") for cell in notebook.cells for out in cell.get("outputs", [])
    )


def assert_every_message_accounted_for(outputs: str, table: str) -> None:
    assert "1000 published to quickstart.events; 0 left there" in outputs
    assert f"1000 rows in {table} (1000 distinct message ids)" in outputs
    assert "500 clicks routed to quickstart.clicks" in outputs
    assert "500 views routed to quickstart.views" in outputs
    assert "every message accounted for" in outputs


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.versions
@pytest.mark.timeout(900)
def test_quickstart_notebook_reads_a_queue_into_a_table_and_every_message_arrives(
    tmp_path: Path,
) -> None:
    outputs = run(nbformat.read(NOTEBOOK, as_version=4), tmp_path)

    assert_every_message_accounted_for(outputs, "amqp_quickstart_events")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quickstart_notebook_as_databricks_runs_it_logs_in_with_a_secret_and_stops_nothing_given(
    tmp_path: Path,
) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    users = {"quickstart": {"password": PASSWORD, "vhosts": ["/"]}}
    with Broker(config={"users": users}) as broker:
        typed = {
            "amqp_uri": f"amqp://127.0.0.1:{broker.port}/%2F",  # no user, no password
            "username": "quickstart",
            "secret_scope": "amqp",
            "checkpoints": str(tmp_path / "volume"),
            "table": "quickstart_given",
        }
        secrets = {"amqp": {"amqp-password": PASSWORD}}
        given = GIVEN.format(scratch=str(tmp_path / "spark"), typed=typed, secrets=secrets)
        notebook.cells.insert(0, nbformat.v4.new_code_cell(given))
        notebook.cells.append(nbformat.v4.new_code_cell(AFTER))

        outputs = run(notebook, tmp_path)

    assert f"broker: {typed['amqp_uri']}" in outputs
    assert PASSWORD not in outputs
    assert_every_message_accounted_for(outputs, "quickstart_given")
    widgets = ["amqp_uri", "checkpoints", "secret_key", "secret_scope", "table", "username"]
    assert f"widgets: {widgets}" in outputs
    assert not list((tmp_path / "volume").iterdir())  # its run's checkpoints removed
