"""A driver killed with SIGKILL mid-stream on a stream queue, restarted from its checkpoint:
with a sink idempotent per batch id, every message is written exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame

from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import bodies, stream_options
from tests.spark.killed_driver import run_until_killed

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_driver_killed_mid_stream_restarts_without_gap_or_duplicate(
    broker: Broker, queries: Queries, stream_queue: str, tmp_path: Path
) -> None:
    broker.publish(stream_queue, bodies(60))
    checkpoint = queries.checkpoint()
    opts = stream_options(broker, stream_queue, startingOffsets="first", maxMessagesPerTrigger="10")

    by_batch = run_until_killed(opts, checkpoint, tmp_path / "out")
    killed_at = max(by_batch)

    def same_sink(df: DataFrame, batch_id: int) -> None:  # a replayed batch overwrites its id
        by_batch[batch_id] = [r.body for r in df.collect()]

    query = queries.start(opts, checkpoint, same_sink)
    assert query.awaitTermination(180)

    assert killed_at < 5, "the driver was killed after the stream's end: nothing was checked"
    everything = [body for batch in by_batch.values() for body in batch]
    assert sorted(everything) == bodies(60)
