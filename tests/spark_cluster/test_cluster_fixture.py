"""The cluster fixture itself: a start-up that does not finish in time fails naming the
daemon, and leaves no process and no file behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from testbed.spark_cluster import SparkCluster, SparkClusterError

pytestmark = pytest.mark.spark


def processes_with(prefix: str) -> list[int]:
    """The processes with an environment variable that starts with ``prefix``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # not a process, or gone
            continue
        if any(variable.startswith(prefix.encode()) for variable in environment):
            found.append(int(entry.name))
    return found


def test_a_cluster_not_up_in_time_fails_naming_its_daemon_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the cluster's files go
    cluster = SparkCluster(start_timeout=0.5)

    with pytest.raises(SparkClusterError, match="Spark master of the test cluster was not up"):
        cluster.start()

    assert list(tmp_path.iterdir()) == [], "the cluster's directory was not removed"
    assert processes_with(f"SPARK_CONF_DIR={tmp_path}/") == [], "a daemon was left running"
