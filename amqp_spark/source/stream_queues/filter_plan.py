"""Where a filtered read of a stream range may stop, so that it is exact.

AMQP 0-9-1 has no end-of-stream signal, and a filtered consumer is silent over the chunks
the broker skips: silence proves nothing (a slow broker is silent too). What a reader can
rely on is that a Bloom filter has no false negatives: a matching message is delivered,
in offset order. So a filtered read of ``[begin, end)`` ends at the first delivery at or
after a *target*, a matching offset the driver knows:

1. the last match in the range, when the driver's tail saw every message from that match to
   ``end`` (no match can follow it in the range);
2. else the first known match at or after ``end`` (the reader reads past the range's end
   and keeps only what is below it);
3. else no match is known: the range is read unfiltered, stopping by offset (exact, but
   every message is transferred), and only the part the tail did not see: the tail saw
   every message from where it attached, so a part it saw without a match holds none.
"""

from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass


@dataclass(frozen=True)
class ExactRead:
    """How to read the matches of ``[begin, end)`` of a stream exactly."""

    end: int  #: rows are kept below this offset
    stop_at: int  #: the read ends at the first delivery at or after this offset
    on_broker: bool  #: consume with the filter (False: every message comes, checked here)


class MatchesSeen:
    """What the driver's tail saw of one stream with ``filterValues``: the offsets of the
    matching messages (ascending), and the offsets from which on and up to which it saw
    every message (since it last attached)."""

    def __init__(self) -> None:
        self.matches = array("q")
        self.watched_from: int | None = None
        self.seen_to = -1  #: the highest offset seen while watching

    def detached(self) -> None:
        """The tail lost its consumer: what comes until it is back is not seen. Known
        matches stay true (they will still be delivered) but no longer prove a stretch
        holds no other."""
        self.watched_from = None

    def note(self, offset: int, matched: bool) -> None:
        if self.watched_from is None:
            self.watched_from = offset
        self.seen_to = max(self.seen_to, offset)
        if matched and (not self.matches or offset > self.matches[-1]):
            self.matches.append(offset)

    def forget_before(self, offset: int) -> None:
        """Ranges below ``offset`` are read: their matches need not be kept."""
        del self.matches[: bisect.bisect_left(self.matches, offset)]

    def read_of(self, begin: int, end: int) -> ExactRead | None:
        """How to read ``[begin, end)`` exactly (``begin < end``); None: nothing matches."""
        matches, watched = self.matches, self.watched_from
        saw_end = watched is not None and end <= self.seen_to + 1
        i = bisect.bisect_left(matches, end)
        if saw_end and i and matches[i - 1] >= max(begin, watched or 0):
            return ExactRead(end, matches[i - 1], on_broker=True)
        if saw_end and watched is not None and watched <= begin:
            return None  # the tail saw the whole range: no match there
        if i < len(matches):
            return ExactRead(end, matches[i], on_broker=True)
        unseen_end = min(end, watched) if saw_end and watched is not None else end
        return ExactRead(unseen_end, unseen_end - 1, on_broker=False)
