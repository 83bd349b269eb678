"""What a partition carries from the planning side to the executor that reads it.

``read()`` runs on a fresh copy of the reader in an executor: only the partition object
reaches it, so each kind of partition carries everything its read needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pyspark.sql.datasource import InputPartition

from amqp_spark.stream_filter import StreamFilter

T = TypeVar("T")


class ArrowPartition(InputPartition):
    """Deliveries the driver already holds (classic queues), as Arrow IPC bytes."""

    def __init__(self, ipc: bytes) -> None:
        super().__init__(ipc)
        self.ipc = ipc


@dataclass
class StreamRangePartition(InputPartition):
    """Offsets ``[start, end)`` of one stream queue, read by the executor itself."""

    uri: str
    queue: str
    start: int
    end: int
    prefetch: int
    poll_timeout: float
    max_reconnect_attempts: int
    stream_filter: StreamFilter | None = None  #: filterValues: only matches become rows
    filter_on_broker: bool = True  #: consume with the filter (False: read every message)
    stop_at: int | None = None  #: the read ends at the first delivery at or after this
    #: offset (None: ``end - 1``); with a filter, a match the driver saw
    fail_on_data_loss: bool = True  #: an offset of the range gone from the stream fails the read


@dataclass
class StreamProtocolRangePartition(InputPartition):
    """Offsets ``[start, end)`` of one stream queue, read by the executor over RabbitMQ's
    stream protocol (``stream_uri``: a ``rabbitmq-stream://`` URI naming one node or
    several)."""

    stream_uri: str
    queue: str
    start: int
    end: int
    poll_timeout: float
    max_reconnect_attempts: int
    fail_on_data_loss: bool = True


@dataclass
class QueueDrainPartition(InputPartition):
    """A batch read of up to ``count`` messages of one classic queue, acked or requeued at
    the end of the read."""

    uri: str
    queue: str
    count: int
    ack: bool
    prefetch: int
    poll_timeout: float
    max_reconnect_attempts: int


def split_rows(
    segments: Iterable[tuple[str, Sequence[T]]], size: int
) -> Iterator[tuple[str, Sequence[T]]]:
    """Each queue's rows cut into pieces of at most ``size``: one partition each."""
    for queue, rows in segments:
        for first in range(0, len(rows), size):
            yield queue, rows[first : first + size]
