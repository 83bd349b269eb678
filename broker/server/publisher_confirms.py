"""A channel's publisher confirms (confirm.select): the sequence numbers of its publishes,
the confirms owed, and when they may go.

Confirms collected while the connection reads one batch of input go out together after it
(``AMQPConnection.confirms_pending``), runs of acks as one multiple ack. A publish the store
journals (a persistent message on a durable queue) is confirmed only once the journal has it
on disk (``journal_done``, called by the store as its ``JournalWaiter``), and the confirms
after it wait too: confirms leave in order.
"""

from __future__ import annotations

import bisect
from collections import deque

from ..model.queues import Queue
from ..model.stats import MessageStats
from .abc import Channel


def _sequence(confirm: tuple[int, bool]) -> int:
    return confirm[0]


class PublisherConfirms:
    """The confirms of ``channel``, counted in its ``stats`` as they go out."""

    __slots__ = ("next_seq", "_channel", "_stats", "_owed", "_journal_waiting", "_unflushed")

    def __init__(self, channel: Channel, stats: MessageStats) -> None:
        self._channel = channel
        self._stats = stats
        #: The sequence number of the publish being routed: the store's token for it is
        #: ``(self, next_seq)``, and ``journal_done`` gets the number back.
        self.next_seq = 1
        #: (sequence number, accepted by every queue it was routed to), not yet sent
        self._owed: list[tuple[int, bool]] = []
        #: Publishes whose confirms wait for the store's journal, in order; the confirms
        #: from the first of them on are held back.
        self._journal_waiting: deque[int] = deque()
        #: Queues that buffer publishes (streams), flushed before confirms go out.
        self._unflushed: set[Queue] = set()

    def buffered_by(self, queue: Queue) -> None:
        """The publish being routed waits in ``queue``, which buffers publishes: it is
        flushed before the confirms go out."""
        self._unflushed.add(queue)

    def published(self, accepted: bool, journaled: bool) -> None:
        """The publish being routed was enqueued (``accepted``: by every queue it was routed
        to); ``journaled``: its confirm waits for the journal."""
        seq = self.next_seq
        self.next_seq = seq + 1
        if journaled:
            self._journal_waiting.append(seq)
        if not self._owed:
            self._channel.conn.confirms_pending(self._channel)
        self._owed.append((seq, accepted))

    def journal_done(self, sequence_numbers: list[int], ok: bool) -> None:
        """The store wrote (or failed to write) these publishes: their confirms may go,
        as nacks if it failed."""
        if self._channel.closed:
            return
        done = set(sequence_numbers)
        waiting = self._journal_waiting
        while waiting and waiting[0] in done:
            waiting.popleft()
        if not ok:
            self._owed = [(seq, good and seq not in done) for seq, good in self._owed]
        self.flush()

    def flush(self) -> None:
        """Send the confirms owed: runs of acks as one multiple ack. Buffering queues are
        flushed first; confirms still waiting for the journal stay. None once the channel is
        closed (see ``ServerChannel.teardown``)."""
        channel = self._channel
        if channel.closed:
            return
        for q in self._unflushed:
            q.flush()
        self._unflushed.clear()
        held = len(self._owed)
        if self._journal_waiting:
            held = bisect.bisect_left(self._owed, self._journal_waiting[0], key=_sequence)
        confirms, self._owed = self._owed[:held], self._owed[held:]
        if not confirms:
            return  # and 0-9, which has no basic.nack, never looks one up
        self._stats.confirm += len(confirms)
        ack, nack = channel.conn.spec.method("basic.ack"), channel.conn.spec.method("basic.nack")
        run_start: int | None = None
        last = 0
        for seq, ok in confirms:
            if ok:
                if run_start is None:
                    run_start = seq
                last = seq
                continue
            if run_start is not None:
                channel.send(ack(delivery_tag=last, multiple=last > run_start))
                run_start = None
            channel.send(nack(delivery_tag=seq, multiple=False, requeue=False))
        if run_start is not None:
            channel.send(ack(delivery_tag=last, multiple=last > run_start))
