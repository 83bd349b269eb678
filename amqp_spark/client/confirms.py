"""Bookkeeping of publisher confirms on one channel (confirm.select mode).

Sequence numbers start at 1 and count every message published after confirm.select; the
broker acks or nacks them, singly or "multiple" (everything up to a tag). Returned mandatory
messages are collected separately: RabbitMQ sends basic.return *before* the basic.ack of the
same message, so an ack does not mean the message was routed.

The outstanding sequence numbers are kept as a range, ``[_low, _next)``, minus the few
settled out of order (single acks above ``_low``): registering a batch and settling a
multiple ack cost O(1) whatever their size, amortized over the out-of-order settlements.

Not thread-safe: the channel calls it under its lock.
"""

from __future__ import annotations

import heapq

from .delivery import ReturnedMessage
from .exceptions import ClientError, PublishNacked, PublishReturned


class ConfirmTracker:
    def __init__(self) -> None:
        self._next = 1  #: the sequence number of the next message published
        self._low = 1  #: every sequence number below this one is settled
        #: Settled sequence numbers above ``_low``: a set to look up, a heap to drop in order.
        self._early: set[int] = set()
        self._early_heap: list[int] = []
        self._nacked: list[int] = []
        self._returned: list[ReturnedMessage] = []

    @property
    def settled_below(self) -> int:
        """Every sequence number below this one is settled (some above it may be too)."""
        return self._low

    @property
    def outstanding(self) -> int:
        return self._next - self._low - len(self._early)

    def published(self, count: int) -> range:
        """Register ``count`` messages just written; returns their sequence numbers."""
        seqs = range(self._next, self._next + count)
        self._next += count
        return seqs

    def confirmed(self, tag: int, multiple: bool, *, ack: bool) -> None:
        """Apply a basic.ack (``ack``) or basic.nack; tag 0 with multiple means all.
        Tags of messages not outstanding (settled already, never published) are ignored."""
        if multiple:
            end = self._next if tag == 0 else min(tag + 1, self._next)
            if end > self._low:
                self._settle_below(end, ack)
        elif self._low <= tag < self._next and tag not in self._early:
            if not ack:
                self._nacked.append(tag)
            if tag == self._low:
                self._settle_below(tag + 1, ack=True)
            else:
                self._early.add(tag)
                heapq.heappush(self._early_heap, tag)

    def _settle_below(self, end: int, ack: bool) -> None:
        """Settle every outstanding sequence number below ``end``, then move ``_low`` past
        the ones settled early that now follow it."""
        early, heap = self._early, self._early_heap
        if not ack:
            self._nacked += (seq for seq in range(self._low, end) if seq not in early)
        while heap and heap[0] < end:
            early.discard(heapq.heappop(heap))
        while heap and heap[0] == end:
            early.discard(heapq.heappop(heap))
            end += 1
        self._low = end

    def returned(self, message: ReturnedMessage) -> None:
        self._returned.append(message)

    def take_failure(self) -> ClientError | None:
        """The error to raise for what was nacked or returned since the last call (then
        forgotten), or None when everything was confirmed."""
        nacked, returned = self._nacked, self._returned
        self._nacked, self._returned = [], []
        if nacked:
            return PublishNacked(nacked, returned=len(returned))
        if returned:
            return PublishReturned(returned)
        return None
