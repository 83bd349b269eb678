"""Which journal records still matter: the bookkeeping that lets whole segments be deleted.

Message ids grow with file position, so each segment holds a contiguous id range and one bit
per message says whether any queue still holds it. A message routed to several queues also
has a remaining-queue count until the last queue acknowledges it. The same object is built
by recovery (replaying the journal) and kept up to date by the journal's writer thread.
"""

from __future__ import annotations

from bisect import bisect_right


class _Segment:
    __slots__ = ("number", "first_id", "bits", "live")

    def __init__(self, number: int, first_id: int) -> None:
        self.number = number
        self.first_id = first_id
        self.bits = bytearray()
        self.live = 0


class Liveness:
    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        self._first_ids: list[int] = []
        self._refs: dict[int, int] = {}

    def open_segment(self, number: int, first_id: int) -> None:
        """Messages published from now on are in segment ``number``, from ``first_id`` on."""
        self._segments.append(_Segment(number, first_id))
        self._first_ids.append(first_id)

    def published(self, msg_id: int, queues: int) -> None:
        """``msg_id`` (the next id of the last segment) is now held by ``queues`` queues."""
        seg = self._segments[-1]
        index = msg_id - seg.first_id
        need = (index >> 3) + 1
        if len(seg.bits) < need:
            seg.bits.extend(bytes(need - len(seg.bits)))
        if queues > 0:
            seg.bits[index >> 3] |= 1 << (index & 7)
            seg.live += 1
            if queues > 1:
                self._refs[msg_id] = queues

    def acked(self, msg_id: int) -> None:
        """One queue no longer holds ``msg_id``. Unknown or already dead ids are ignored."""
        remaining = self._refs.get(msg_id)
        if remaining is not None:
            if remaining > 1:
                self._refs[msg_id] = remaining - 1
                return
            del self._refs[msg_id]
        i = bisect_right(self._first_ids, msg_id) - 1
        if i < 0:
            return
        seg = self._segments[i]
        index = msg_id - seg.first_id
        byte = index >> 3
        mask = 1 << (index & 7)
        if byte < len(seg.bits) and seg.bits[byte] & mask:
            seg.bits[byte] &= ~mask
            seg.live -= 1

    def pop_dead_head(self) -> list[int]:
        """Numbers of the oldest segments no message in which is held any more (never the last
        one), removed from the bookkeeping: their files can be deleted.

        Only a prefix may go: an ACK in a segment can cancel a PUBLISH in an older one, so a
        segment is deleted only after every older one.
        """
        dead: list[int] = []
        while len(self._segments) > 1 and self._segments[0].live == 0:
            dead.append(self._segments.pop(0).number)
            self._first_ids.pop(0)
        return dead

    @property
    def segment_numbers(self) -> list[int]:
        return [s.number for s in self._segments]

    @property
    def live_messages(self) -> int:
        return sum(s.live for s in self._segments)
