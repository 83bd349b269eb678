"""The prefetch size of 0-9's basic.qos and message.qos and of the 0-10 draft's message.qos,
which RabbitMQ (0-9-1) refuses: the dialects that take it hold deliveries back with
``within_prefetch_size``."""

from __future__ import annotations

from .abc import Channel


def within_prefetch_size(channel: Channel, size: int) -> bool:
    """Whether a delivery to a consumer that acknowledges may go on ``channel`` under a
    prefetch size of ``size`` octets (0: no limit). Rules basic.qos.prefetch-size:01 (0-9)
    and message.qos.prefetch-size:non-responsive-client (0-10 draft): the size never holds
    back a message when nothing is unacknowledged; otherwise more go only while the
    unacknowledged octets stay under it."""
    if not size or not channel.unacked:
        return True
    return sum(len(entry.message.body) for _, _, entry in channel.unacked.values()) < size
