"""The unconfirmed messages of one stream publisher: flow control, confirms, errors, and
what to send again on another connection.

Over the stream protocol a publisher sends messages under publishing ids and the broker
answers PublishConfirm (lists of ids) or PublishError (id and response code per message).
The window keeps every message sent and not yet answered, so that

* the writer sends only while fewer than ``max_in_flight`` are outstanding (``room``),
* ``finish`` can tell that every message was confirmed, or which were refused and why,
* after a lost connection the publisher sends again those the stream does not hold
  (``stored_through`` drops those at or below the stream's sequence, ``unconfirmed`` gives
  the rest in order).

A message the stream drops as a duplicate is confirmed like any other (measured, docs/
measurements/stream-dedup.md). Confirms of ids not outstanding (answered already, or sent
on a lost connection) are ignored. Not thread-safe: one task's thread owns it.
"""

from __future__ import annotations

from collections.abc import Iterable

from amqp_protocol.stream.values import PublishedMessage


class PublishWindow:
    """Outstanding messages of one publisher."""

    def __init__(self, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        #: messages sent and not answered, by publishing id, in the order sent.
        self._pending: dict[int, PublishedMessage] = {}
        #: (publishing id, response code) of every message the broker refused.
        self.refused: list[tuple[int, int]] = []
        self.confirmed = 0

    @property
    def outstanding(self) -> int:
        return len(self._pending)

    @property
    def room(self) -> int:
        """How many more messages may be sent before waiting for confirms."""
        return max(0, self.max_in_flight - len(self._pending))

    def sent(self, messages: Iterable[PublishedMessage]) -> None:
        """Register messages just written, in increasing publishing id order."""
        self._pending.update((m.publishing_id, m) for m in messages)

    def on_confirm(self, publishing_ids: Iterable[int]) -> None:
        """Apply a PublishConfirm."""
        for publishing_id in publishing_ids:
            if self._pending.pop(publishing_id, None) is not None:
                self.confirmed += 1

    def on_error(self, errors: Iterable[tuple[int, int]]) -> None:
        """Apply a PublishError: (publishing id, response code) per refused message."""
        for publishing_id, code in errors:
            if self._pending.pop(publishing_id, None) is not None:
                self.refused.append((publishing_id, code))

    def stored_through(self, sequence: int) -> int:
        """The stream holds every publishing id up to ``sequence`` (QueryPublisherSequence
        on a new connection): those outstanding count as confirmed; returns how many."""
        held = [pid for pid in self._pending if pid <= sequence]
        for pid in held:
            del self._pending[pid]
        self.confirmed += len(held)
        return len(held)

    def unconfirmed(self) -> list[PublishedMessage]:
        """The outstanding messages, in the order sent (increasing publishing id)."""
        return list(self._pending.values())
