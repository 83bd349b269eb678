"""The stream readers as PySpark 4.0 and 4.1 call them: ``latestOffset()`` without a start
or a limit, first before ``initialOffset`` on a fresh start (measured:
docs/pyspark-versions.md). The reader is driven in this process as the source runner drives
it, on every PySpark (a Spark with admission control never calls it so)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.spark.conftest import Broker, ReaderFactory
from tests.spark.inputs import bodies

pytestmark = [pytest.mark.spark, pytest.mark.versions]


def latest_until(reader: Any, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """``latestOffset()`` until ``done`` says the answer is there (the stream's tail follows
    what was published within moments), at most 15 s."""
    deadline = time.monotonic() + 15
    end: dict[str, Any] = reader.latestOffset()
    while not done(end) and time.monotonic() < deadline:
        time.sleep(0.1)
        end = reader.latestOffset()
    return end


def test_the_first_batch_starts_at_the_initial_offset_spark_is_then_given(
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(10))
    reader, _ = runner_reader_of(
        queue=stream_queue, queueType="stream", startingOffsets="next", maxMessagesPerTrigger="3"
    )

    opening = reader.latestOffset()  # before initialOffset, as Spark 4.0 and 4.1 call it
    broker.publish(stream_queue, bodies(5, "new"))

    assert reader.initialOffset() == opening, "the first batch would not start at its start"
    assert opening["queues"] == {stream_queue: 10}
    ends = [10]
    deadline = time.monotonic() + 15
    while ends[-1] < 15 and time.monotonic() < deadline:
        end = reader.latestOffset()["queues"][stream_queue]
        if end != ends[-1]:
            ends.append(end)
        time.sleep(0.05)
    assert ends[-1] == 15
    steps = [b - a for a, b in itertools.pairwise(ends)]
    assert max(steps) <= 3, f"maxMessagesPerTrigger was not applied: batch ends {ends}"


def test_a_replanned_batch_sets_where_the_next_one_starts(
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    """A restarted run is first asked to plan its checkpoint's last batch (measured); the
    next batch starts at that batch's end, not at the initial offset."""
    broker.publish(stream_queue, bodies(20))
    reader, _ = runner_reader_of(
        queue=stream_queue, queueType="stream", startingOffsets="first", maxMessagesPerTrigger="5"
    )

    replanned = {"kind": "stream", "queues": {stream_queue: 12}}
    reader.partitions({"kind": "stream", "queues": {stream_queue: 4}}, replanned)
    after = latest_until(reader, lambda end: end["queues"][stream_queue] > 12)

    assert after["queues"] == {stream_queue: 17}, "the batch did not start at the replanned end"


def test_min_messages_holds_back_every_batch_but_the_opening_one(
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    """The run's first batch may be an AvailableNow or once run's only one: it is never held
    back; later ones wait for ``minMessagesPerTrigger``."""
    broker.publish(stream_queue, bodies(3))
    reader, _ = runner_reader_of(
        queue=stream_queue,
        queueType="stream",
        startingOffsets="first",
        minMessagesPerTrigger="10",
        maxTriggerDelay="1h",
    )

    assert reader.latestOffset()["queues"] == {stream_queue: 3}
    broker.publish(stream_queue, bodies(4, "few"))
    time.sleep(1)  # the tail sees them
    assert reader.latestOffset()["queues"] == {stream_queue: 3}, "a batch under the minimum"
    broker.publish(stream_queue, bodies(6, "more"))
    admitted = latest_until(reader, lambda end: end["queues"][stream_queue] > 3)
    assert admitted["queues"] == {stream_queue: 13}


def test_a_classic_stream_without_checkpoint_location_fails_naming_the_option(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    reader, _ = runner_reader_of(queue=queue)

    with pytest.raises(RuntimeError, match="needs the source option 'checkpointLocation'"):
        reader.latestOffset()
