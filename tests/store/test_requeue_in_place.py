"""ReadyMessages.put_back_in_place (a classic queue's requeue, RabbitMQ 4's order): entries
taken and put back return to their places, also among entries read back from a spill,
which keeps no place of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from amqp_protocol import SPEC_0_9_1
from broker.model.message import Message, QueuedMessage
from broker.model.ready_messages import ReadyMessages
from broker.store import SpillFifo
from broker.store.spilled_entries import SpilledEntries


def _entry(i: int, priority: int = 0) -> QueuedMessage:
    properties = SPEC_0_9_1.properties("basic")(priority=priority)
    return QueuedMessage(Message("", "q", properties, b"%d" % i), None)


def _bodies(ready: ReadyMessages) -> list[int]:
    out = []
    while ready:
        out.append(int(ready.popleft().message.body))
    return out


def test_entries_put_back_return_to_their_places_among_spilled_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ReadyMessages, "SPILL_AFTER_MESSAGES", 3)
    ready = ReadyMessages(spill_factory=lambda: SpilledEntries(SpillFifo(tmp_path)))
    for i in range(1, 11):
        ready.append(_entry(i))
    assert ready.spilled == 7
    taken = [ready.popleft() for _ in range(6)]  # 4..6 come back from the spill
    ready.put_back_in_place([taken[4], taken[1]])  # 5, then 2
    ready.put_back_in_place([taken[5], taken[0]])  # 6, then 1
    assert _bodies(ready) == [1, 2, 5, 6, 7, 8, 9, 10]


def test_entries_put_back_keep_their_places_within_their_priority() -> None:
    ready = ReadyMessages(levels=3)
    for i, priority in enumerate([0, 2, 0, 2, 1], 1):
        ready.append(_entry(i, priority))
    taken = [ready.popleft() for _ in range(5)]  # 2, 4, 5, 1, 3
    ready.put_back_in_place(list(reversed(taken)))
    assert _bodies(ready) == [2, 4, 5, 1, 3]
