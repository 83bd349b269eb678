"""What a partition carries from the planning side to the executor that reads it.

``read()`` runs on a fresh copy of the reader in an executor: only the partition object
reaches it, so each kind of partition carries everything its read needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pyspark.sql.datasource import InputPartition

from amqp_spark.stream_filter import StreamFilter

R = TypeVar("R", bound="Rows")


class Rows(Protocol):
    """Rows that can be counted and cut (a list, ``DeliveryColumns``)."""

    def __len__(self) -> int: ...

    def __getitem__(self: R, rows: slice, /) -> R: ...


@dataclass
class HeldRowsPartition(InputPartition):
    """Deliveries of one classic queue the driver holds, as Arrow IPC bytes: each row's own
    columns and kind (``rows``), and the columns of the distinct kinds (``kinds``), which the
    executor joins (``arrow.joined_record_batch``)."""

    queue: str
    rows: bytes
    kinds: bytes


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
    stream_filter: StreamFilter | None = None  #: filterValues: only matches become rows
    #: with a filter: the stream's committed chunk when the range was planned (it holds the
    #: range's end or follows it); -1: not known
    committed_chunk_id: int = -1


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


def split_rows(segments: Iterable[tuple[str, R]], size: int) -> Iterator[tuple[str, R]]:
    """Each queue's rows cut into pieces of at most ``size``: one partition each."""
    for queue, rows in segments:
        for first in range(0, len(rows), size):
            yield queue, rows[first : first + size]
