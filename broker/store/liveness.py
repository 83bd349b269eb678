"""Which journal records still matter: the bookkeeping that lets segments be deleted, whole
or after compaction.

Message ids grow with file position, so each segment holds a contiguous id range of PUBLISH
records and one bit per message says whether any queue still holds it. A message journaled
for several queues also has the tuple of queues still holding it until the last one
acknowledges it. Compaction copies the live messages of a sparse oldest segment into the
newest as MOVED records (``moved``): those few messages are then found by id in a dict
instead of by range. The same object is built by recovery (replaying the journal) and kept
up to date by the journal's writer thread.
"""

from __future__ import annotations

from bisect import bisect_right


class _Segment:
    __slots__ = ("number", "first_id", "bits", "live", "moved", "records")

    def __init__(self, number: int, first_id: int) -> None:
        self.number = number
        self.first_id = first_id
        self.bits = bytearray()
        #: live messages of this segment's PUBLISH records
        self.live = 0
        #: live messages of this segment's MOVED records
        self.moved = 0
        #: records written to this segment, of any kind
        self.records = 0


class Liveness:
    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        self._first_ids: list[int] = []
        #: msg id -> queues still holding it, for messages journaled for several queues
        self._holders: dict[int, tuple[int, ...]] = {}
        #: msg id -> the segment of its live MOVED record
        self._moved: dict[int, _Segment] = {}

    def open_segment(self, number: int, first_id: int) -> None:
        """Messages published from now on are in segment ``number``, from ``first_id`` on."""
        self._segments.append(_Segment(number, first_id))
        self._first_ids.append(first_id)

    def published(self, msg_id: int, queues: int) -> None:
        """``msg_id`` (the next id of the last segment) is now held by ``queues`` queues (0 or
        1; ``published_to`` for more)."""
        seg = self._segments[-1]
        seg.records += 1
        index = msg_id - seg.first_id
        need = (index >> 3) + 1
        if len(seg.bits) < need:
            seg.bits.extend(bytes(need - len(seg.bits)))
        if queues > 0:
            seg.bits[index >> 3] |= 1 << (index & 7)
            seg.live += 1

    def published_to(self, msg_id: int, queue_ids: tuple[int, ...]) -> None:
        """``msg_id`` (the next id of the last segment) is now held by the queues
        ``queue_ids``, from a record that names several queues."""
        self.published(msg_id, 1 if queue_ids else 0)
        if queue_ids:
            self._holders[msg_id] = queue_ids

    def acks_recorded(self, count: int = 1) -> None:
        """``count`` ACK records were written to the last segment."""
        self._segments[-1].records += count

    def acked(self, msg_id: int, queue_id: int) -> None:
        """``queue_id`` no longer holds ``msg_id``. Unknown or already dead ids are ignored."""
        holders = self._holders.get(msg_id)
        if holders is not None:
            if queue_id not in holders:
                return
            if len(holders) > 1:
                self._holders[msg_id] = tuple(q for q in holders if q != queue_id)
                return
            del self._holders[msg_id]
        moved_to = self._moved.pop(msg_id, None)
        if moved_to is not None:
            moved_to.moved -= 1
            return
        self._clear_bit(msg_id)

    def _clear_bit(self, msg_id: int) -> bool:
        i = bisect_right(self._first_ids, msg_id) - 1
        if i < 0:
            return False
        seg = self._segments[i]
        index = msg_id - seg.first_id
        byte = index >> 3
        mask = 1 << (index & 7)
        if byte < len(seg.bits) and seg.bits[byte] & mask:
            seg.bits[byte] &= ~mask
            seg.live -= 1
            return True
        return False

    def moved(self, msg_id: int, queue_ids: tuple[int, ...]) -> None:
        """A MOVED record of ``msg_id`` in the last segment holds it for ``queue_ids`` from
        now on; an older record of it (whose segment a crash kept) no longer matters."""
        seg = self._segments[-1]
        seg.records += 1
        before = self._moved.pop(msg_id, None)
        if before is not None:
            before.moved -= 1
        else:
            self._clear_bit(msg_id)
        self._holders.pop(msg_id, None)
        if queue_ids:
            self._moved[msg_id] = seg
            seg.moved += 1
            if len(queue_ids) > 1:
                self._holders[msg_id] = queue_ids

    def holders(self, msg_id: int) -> tuple[int, ...] | None:
        """The queues still holding a message journaled for several queues (None for a
        message journaled for one)."""
        return self._holders.get(msg_id)

    def is_live_in(self, number: int, msg_id: int, kind_moved: bool) -> bool:
        """Whether the PUBLISH (or with ``kind_moved``, MOVED) record of ``msg_id`` in segment
        ``number`` is the one that holds a live message."""
        if kind_moved:
            seg = self._moved.get(msg_id)
            return seg is not None and seg.number == number
        if msg_id in self._moved:
            return False
        i = bisect_right(self._first_ids, msg_id) - 1
        if i < 0 or self._segments[i].number != number:
            return False
        seg = self._segments[i]
        index = msg_id - seg.first_id
        return index >> 3 < len(seg.bits) and bool(seg.bits[index >> 3] & (1 << (index & 7)))

    def sparse_head(self, live_fraction: float) -> int | None:
        """The number of the oldest segment if it is not the last one and at most
        ``live_fraction`` of its records hold live messages: compaction copies those out
        so that it can be deleted."""
        if len(self._segments) < 2:
            return None
        head = self._segments[0]
        if head.live + head.moved > live_fraction * head.records:
            return None
        return head.number

    def pop_dead_head(self) -> list[int]:
        """Numbers of the oldest segments no message in which is held any more (never the last
        one), removed from the bookkeeping: their files can be deleted.

        Only a prefix may go: an ACK in a segment can cancel a PUBLISH in an older one, so a
        segment is deleted only after every older one.
        """
        dead: list[int] = []
        while (
            len(self._segments) > 1 and self._segments[0].live == 0 and not self._segments[0].moved
        ):
            dead.append(self._segments.pop(0).number)
            self._first_ids.pop(0)
        return dead

    @property
    def segment_numbers(self) -> list[int]:
        return [s.number for s in self._segments]

    @property
    def live_messages(self) -> int:
        return sum(s.live + s.moved for s in self._segments)
