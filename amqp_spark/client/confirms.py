"""Bookkeeping of publisher confirms on one channel (confirm.select mode).

Sequence numbers start at 1 and count every message published after confirm.select; the
broker acks or nacks them, singly or "multiple" (everything up to a tag). Returned mandatory
messages are collected separately: RabbitMQ sends basic.return *before* the basic.ack of the
same message, so an ack does not mean the message was routed.

Not thread-safe: the channel calls it under its lock.
"""

from __future__ import annotations

from collections import OrderedDict

from .delivery import ReturnedMessage
from .exceptions import ClientError, PublishNacked, PublishReturned


class ConfirmTracker:
    def __init__(self) -> None:
        self._next = 1
        # Insertion-ordered by sequence number; OrderedDict pops its oldest entry in O(1).
        self._outstanding: OrderedDict[int, None] = OrderedDict()
        self._nacked: list[int] = []
        self._returned: list[ReturnedMessage] = []

    @property
    def outstanding(self) -> int:
        return len(self._outstanding)

    def published(self, count: int) -> range:
        """Register ``count`` messages just written; returns their sequence numbers."""
        seqs = range(self._next, self._next + count)
        self._next += count
        self._outstanding.update(dict.fromkeys(seqs))
        return seqs

    def confirmed(self, tag: int, multiple: bool, *, ack: bool) -> None:
        """Apply a basic.ack (``ack``) or basic.nack; tag 0 with multiple means all."""
        if multiple:
            outstanding = self._outstanding
            while outstanding:
                oldest = next(iter(outstanding))
                if tag and oldest > tag:
                    break
                outstanding.popitem(last=False)
                if not ack:
                    self._nacked.append(oldest)
        elif tag in self._outstanding:
            del self._outstanding[tag]
            if not ack:
                self._nacked.append(tag)

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
