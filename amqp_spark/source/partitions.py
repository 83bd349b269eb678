"""What a partition carries from the planning side to the executor that reads it.

``read()`` runs on a fresh copy of the reader in an executor: only the partition object
reaches it, so each kind of partition carries everything its read needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition


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
