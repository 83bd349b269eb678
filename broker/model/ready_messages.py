"""A queue's ready messages in delivery order, by priority level, the tail spilled to disk
past a memory threshold (``ReadyMessages``), and the disk FIFO it spills to (``SpillQueue``)."""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol

from .memory import MemoryGauge
from .message import QueuedMessage


class SpillQueue(Protocol):
    """Queue entries kept on disk, first in first out
    (``broker.store.spilled_entries.SpilledEntries``)."""

    def __len__(self) -> int: ...

    def push(self, entry: QueuedMessage) -> None: ...

    def pop(self) -> QueuedMessage: ...

    def close(self) -> None: ...


def _by_seq(entry: QueuedMessage) -> int:
    return entry.seq


class ReadyMessages:
    """Ready messages in delivery order: one FIFO per priority level (``levels`` of them, one
    without priorities), the highest level served first.

    Past ``SPILL_AFTER_MESSAGES`` or ``SPILL_AFTER_BYTES`` held in memory (over all levels),
    further messages go to disk: each level pushes its own to a ``SpillQueue`` (their bodies
    stop counting against the memory gauge) and takes them back, in order, when its in-memory
    part is empty and it is the level to serve. Within a level every in-memory entry precedes
    every spilled one, so priorities and the order within a priority hold.
    """

    SPILL_AFTER_MESSAGES = 20_000
    SPILL_AFTER_BYTES = 16 << 20

    __slots__ = (
        "_levels",
        "_spills",
        "_len",
        "_spilled",
        "_held_bytes",
        "_memory",
        "_spill_factory",
        "_seqs",
    )

    def __init__(
        self,
        levels: int = 1,
        memory: MemoryGauge | None = None,
        spill_factory: Callable[[], SpillQueue] | None = None,
    ) -> None:
        self._levels: list[deque[QueuedMessage]] = [deque() for _ in range(levels)]
        #: Each level's entries on disk (created on its first spill), newer than its in-memory ones
        self._spills: list[SpillQueue | None] = [None] * levels
        self._len = 0
        self._spilled = 0  #: entries on disk, over all levels
        self._held_bytes = 0  #: body bytes of the in-memory entries
        self._memory = memory
        self._spill_factory = spill_factory
        #: the ``seq`` of each entry appended (``next``: cheaper per publish than a counter)
        self._seqs = itertools.count()

    def __len__(self) -> int:
        return self._len

    @property
    def spilled(self) -> int:
        return self._spilled

    def __iter__(self) -> Iterator[QueuedMessage]:
        """The in-memory entries (all of them once ``clear`` has taken the spilled ones back)."""
        return itertools.chain.from_iterable(reversed(self._levels))

    def _index(self, entry: QueuedMessage) -> int:
        return min(entry.message.priority, len(self._levels) - 1)

    def _memory_full(self) -> bool:
        return (
            self._len - self._spilled >= self.SPILL_AFTER_MESSAGES
            or self._held_bytes >= self.SPILL_AFTER_BYTES
        )

    def append(self, entry: QueuedMessage) -> None:
        entry.seq = next(self._seqs)
        i = min(entry.message.priority, len(self._levels) - 1)
        if self._spill_factory is not None and (
            (self._spilled and self._spills[i])  # the level's spilled entries precede this one
            or self._len - self._spilled >= self.SPILL_AFTER_MESSAGES  # _memory_full, inlined
            or self._held_bytes >= self.SPILL_AFTER_BYTES
        ):
            spill = self._spills[i]
            if spill is None:
                spill = self._spills[i] = self._spill_factory()
            spill.push(entry)
            self._spilled += 1
            self._len += 1
            if self._memory is not None:
                self._memory.sub(entry.size)
            return
        self._len += 1
        self._held_bytes += entry.size
        self._levels[i].append(entry)

    def put_back_in_place(self, entries: list[QueuedMessage]) -> None:
        """Put ``entries`` (taken from this queue) back where they were among the entries
        of their level, by ``seq``: a consumer sees them again in the order they were
        appended, as RabbitMQ 4's classic queues do after a nack or reject with requeue, a
        basic.recover or a closed channel (measured on 4.0.5: of 1..6 all taken, nack 5, 2,
        4 gives 2, 4, 5). Costs the entries plus the ready ones with a lower ``seq``
        (earlier returns waiting at the head); spilled entries are all newer."""
        by_level: dict[int, list[QueuedMessage]] = {}
        for entry in sorted(entries, key=_by_seq):
            by_level.setdefault(self._index(entry), []).append(entry)
            self._held_bytes += entry.size
        self._len += len(entries)
        for i, batch in by_level.items():
            level = self._levels[i]
            ahead = []
            last = batch[-1].seq
            while level and level[0].seq < last:
                ahead.append(level.popleft())
            level.extendleft(reversed(list(heapq.merge(ahead, batch, key=_by_seq))))

    def put_back_behind_returns(self, entries: list[QueuedMessage]) -> None:
        """Put ``entries`` back, in order, ahead of every entry of their level never
        delivered and behind the redelivered ones at its head (RabbitMQ 4.0's quorum queues
        serve returned messages first, in the order they came back)."""
        by_level: dict[int, list[QueuedMessage]] = {}
        for entry in entries:
            by_level.setdefault(self._index(entry), []).append(entry)
            self._held_bytes += entry.size
        self._len += len(entries)
        for i, batch in by_level.items():
            level = self._levels[i]
            returns = []
            while level and level[0].redelivered:
                returns.append(level.popleft())
            level.extendleft(reversed(returns + batch))

    def _head_level(self) -> deque[QueuedMessage] | None:
        """The in-memory FIFO of the highest level with entries (refilled from disk if all
        of that level's are there), None when empty."""
        levels = self._levels
        if not self._spilled:
            for level in reversed(levels):
                if level:
                    return level
            return None
        for i in range(len(levels) - 1, -1, -1):
            if levels[i]:
                return levels[i]
            if self._spills[i]:
                return self._refill(i)
        return None

    def _refill(self, i: int) -> deque[QueuedMessage]:
        """Take level ``i``'s spilled entries back into memory, oldest first, up to the
        thresholds but at least one (the other levels may hold all the memory allowed)."""
        spill = self._spills[i]
        assert spill is not None
        level = self._levels[i]
        taken = 0
        while spill and not (level and self._memory_full()):
            entry = spill.pop()
            # A spill keeps no ``seq``: one above every entry in memory keeps the order.
            entry.seq = next(self._seqs)
            level.append(entry)
            self._spilled -= 1
            self._held_bytes += entry.size
            taken += entry.size
        if self._memory is not None:
            self._memory.add(taken)
        return level

    def peek(self) -> QueuedMessage | None:
        level = self._head_level()
        return level[0] if level else None

    def popleft(self) -> QueuedMessage:
        level = self._head_level()
        assert level is not None, "popleft from an empty queue"
        return self._take(level)

    def _take(self, level: deque[QueuedMessage]) -> QueuedMessage:
        self._len -= 1
        entry = level.popleft()
        self._held_bytes -= entry.size
        return entry

    def pop_lowest(self) -> QueuedMessage:
        """Remove the oldest entry of the lowest priority present (the head when the queue
        has one level)."""
        for i, level in enumerate(self._levels):
            if level:
                return self._take(level)
            if self._spills[i]:
                return self._take(self._refill(i))
        raise IndexError("pop_lowest from an empty queue")

    def clear(self) -> list[QueuedMessage]:
        """Remove and return every entry (spilled ones read back first)."""
        taken = 0
        for level, spill in zip(self._levels, self._spills, strict=True):
            while spill:
                entry = spill.pop()
                level.append(entry)
                taken += entry.size
        if self._memory is not None:
            self._memory.add(taken)
        entries = list(self)
        for level in self._levels:
            level.clear()
        self._len = self._spilled = self._held_bytes = 0
        return entries

    def close(self) -> None:
        """Delete the spill files (the queue is gone)."""
        for spill in self._spills:
            if spill is not None:
                spill.close()
        self._spills = [None] * len(self._levels)
