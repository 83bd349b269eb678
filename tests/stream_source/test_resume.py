"""A range read that outlives its connections (``resume``), with a fake read and a fake
clock: where each reopening starts, the pauses between losses in a row, when it gives up."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from amqp_spark.client.stream.connection import StreamConnectionLost, StreamError
from amqp_spark.client.stream.nodes import is_transient
from amqp_spark.source.partitions import StreamProtocolRangePartition
from amqp_spark.source.stream_queues.resume import resuming

PART = StreamProtocolRangePartition(
    stream_uri="rabbitmq-stream://n1,n2", queue="q", start=10, end=30, poll_timeout=1.0,
    max_reconnect_attempts=3,
)  # fmt: skip


class FlakyRead:
    """Yields a batch of 5 offsets from where it is opened, then fails with the next of
    ``failures`` (none left: reads to the end)."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.opened_at: list[int] = []

    def __call__(self, part: StreamProtocolRangePartition) -> Iterator[pa.RecordBatch]:
        self.opened_at.append(part.start)
        if self.failures and part.start > 10 and len(self.opened_at) > 1:
            raise self.failures.pop(0)  # lost before a row: at once
        stop = part.end if not self.failures else min(part.start + 5, part.end)
        yield pa.record_batch({"offset": pa.array(range(part.start, stop), pa.int64())})
        if self.failures:
            raise self.failures.pop(0)


def test_a_read_goes_on_after_the_last_row_and_pauses_longer_at_each_loss_in_a_row() -> None:
    not_available = StreamError("subscribing", 0x06)
    read = FlakyRead([StreamConnectionLost("lost"), not_available, not_available])
    pauses: list[float] = []

    offsets = [
        o for batch in resuming(PART, read, is_transient, pauses.append)
        for o in batch.column("offset").to_pylist()
    ]  # fmt: skip

    assert offsets == list(range(10, 30))
    assert read.opened_at == [10, 15, 15, 15]
    assert pauses == [0.5, 1.0]  # none after the first loss


def test_a_read_gives_up_after_max_reconnect_attempts_plus_one_losses_in_a_row() -> None:
    lost: list[Exception] = [StreamConnectionLost(f"lost {i}") for i in range(10)]
    read = FlakyRead(lost)

    with pytest.raises(StreamConnectionLost, match="lost 4"):
        for _ in resuming(PART, read, is_transient, lambda _: None):
            pass

    assert read.opened_at == [10, 15, 15, 15, 15]


def test_an_error_that_is_no_loss_ends_the_read_at_once() -> None:
    read = FlakyRead([StreamError("subscribing", 0x02)])  # STREAM_DOES_NOT_EXIST

    with pytest.raises(StreamError):
        for _ in resuming(PART, read, is_transient, lambda _: None):
            pass

    assert read.opened_at == [10]
