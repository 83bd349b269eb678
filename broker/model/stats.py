"""Message counters of channels, connections, queues and exchanges, as the management API
reports them (``message_stats``).

They sit on the hot path, so they are plain integer attributes incremented in place (no
call, no lock, no clock); rates are computed by the management plane from samples of them.
A closed channel's counts are added to its connection's, and a closed connection's to the
broker's, so that totals survive the objects that made them.
"""

from __future__ import annotations

#: The counters, in the order RabbitMQ lists them in ``message_stats``.
FIELDS = (
    "publish",
    "publish_in",
    "publish_out",
    "confirm",
    "deliver",
    "deliver_no_ack",
    "get",
    "get_no_ack",
    "redeliver",
    "ack",
)


class MessageStats:
    __slots__ = FIELDS

    publish: int
    publish_in: int
    publish_out: int
    confirm: int
    deliver: int
    deliver_no_ack: int
    get: int
    get_no_ack: int
    redeliver: int
    ack: int

    def __init__(self) -> None:
        for name in FIELDS:
            setattr(self, name, 0)

    def add(self, other: MessageStats) -> None:
        for name in FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in FIELDS}
