"""Admission limits on stream queues: ``maxBytesPerTrigger`` is turned into rows from the
average body size the driver has seen, so with bodies of one size every batch holds at most
``limit // size`` rows, and every message still arrives exactly once."""

from __future__ import annotations

import pytest

from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import stream_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BODY_SIZE = 100


def test_max_bytes_per_trigger_bounds_stream_batches_by_the_body_size(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    messages = [f"{i:05d}".encode().ljust(BODY_SIZE, b".") for i in range(40)]
    broker.publish(stream_queue, messages)
    opts = stream_options(
        broker, stream_queue, startingOffsets="first", maxBytesPerTrigger=str(3 * BODY_SIZE + 50)
    )

    rows, sizes = queries.collect_available_now(opts)

    assert max(sizes) == 3  # 350 bytes hold three 100-byte bodies
    assert sorted((r.offset, r.body) for r in rows) == list(enumerate(messages))
