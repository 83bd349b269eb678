"""A channel's open transaction (tx.select): the publishes and settlements it holds until
tx.commit runs them or tx.rollback drops them."""

from __future__ import annotations

from typing import Any

from ..model.exchanges import Exchange
from ..model.message import Message
from .abc import Unacked

#: A publish held for commit: (exchange, message, mandatory, headers as published: they route)
HeldPublish = tuple[Exchange, Message, bool, dict[str, Any]]
#: A settlement held for commit: (action as ``ServerChannel.settle`` takes it, delivery tag,
#: the delivery)
HeldSettle = tuple[str, int, Unacked]


class Transaction:
    """What a transactional channel holds for its next tx.commit."""

    __slots__ = ("publishes", "settles")

    def __init__(self) -> None:
        self.publishes: list[HeldPublish] = []
        self.settles: list[HeldSettle] = []

    def hold_settles(self, action: str, taken: list[tuple[int, Unacked]]) -> None:
        """An ack, nack or reject of the deliveries ``taken`` (tag, delivery), for commit."""
        self.settles.extend((action, tag, item) for tag, item in taken)

    def take(self) -> tuple[list[HeldPublish], list[HeldSettle]]:
        """What tx.commit runs: the held publishes and settlements, the transaction emptied
        (it goes on: a channel stays transactional)."""
        publishes, settles = self.publishes, self.settles
        self.publishes, self.settles = [], []
        return publishes, settles

    def take_requeues(self) -> list[Unacked]:
        """The held requeues (nacks and rejects with requeue), taken out of the transaction:
        0-9 requeues them elsewhere at commit."""
        requeued = [item for action, _, item in self.settles if action == "requeue"]
        self.settles = [s for s in self.settles if s[0] != "requeue"]
        return requeued

    def roll_back(self, unacked: dict[int, Unacked]) -> dict[int, Unacked]:
        """tx.rollback: the publishes are dropped, and ``unacked`` (the channel's deliveries
        awaiting an ack) gets back those whose settlement is dropped, in delivery-tag order,
        unacknowledged as before the ack."""
        self.publishes.clear()
        unacked.update((tag, item) for _, tag, item in self.settles)
        self.settles.clear()
        return dict(sorted(unacked.items()))

    def drop_settles(self) -> list[Unacked]:
        """The channel is closing: the held settlements never happened; their deliveries."""
        held = [item for _, _, item in self.settles]
        self.settles.clear()
        return held
