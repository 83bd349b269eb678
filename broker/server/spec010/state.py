"""What a 0-10 channel keeps beyond the core's state (its ``dialect_state``)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..abc import Channel
from ..spec09.state import Spec09State


@dataclass(eq=False)
class Session:
    """A session of the draft: its name (a UUID), the channel state it keeps (the channel
    object, with its consumers and unacknowledged deliveries), whether a channel is attached
    to it, and while not, the timer of its detached lifetime."""

    id: uuid.UUID
    channel: Channel
    detached_lifetime: int
    attached: bool = True
    timer: asyncio.TimerHandle | None = None
    #: the last frame-id the client announced with session.high-water-mark
    seen_mark: int = 0


@dataclass
class DraftState:
    #: basic.qos (the draft has no qos-ok, so the core's qos, which sends one, is not used):
    #: the prefetch count of the channel's next consumers, and the channel-wide one
    prefetch: int = 0
    channel_prefetch: int = 0
    #: basic.qos's prefetch size (octets of unacknowledged bodies, rule
    #: basic.qos.prefetch-size:ignore)
    prefetch_size: int = 0
    #: the session attached to the channel (None: opened by channel.open)
    session: Session | None = field(default=None)
    #: the methods of classes other than session and execution received on the channel
    #: (the last command-id, see ``queries``)
    commands: int = 0
    #: message references open on the channel (message.open/resume .. message.close)
    references: dict[str, bytearray] = field(default_factory=dict)
    #: transfers whose body is an open reference, published when it closes:
    #: reference -> [(exchange, routing key, basic properties)]
    held: dict[str, list[tuple[str, str, Any]]] = field(default_factory=dict)
    #: the open transaction (tx.select, or the dtx branch associated with the channel;
    #: None: not transactional)
    tx: Any = None
    #: dtx-demarcation.select was received; a dtx-coordination.recover scan is open
    dtx_selected: bool = False
    dtx_scanning: bool = False
    #: the state of the classes the draft keeps from 0-9 (access tickets, file staging and
    #: deliveries, stream pacing, parked rejects), which 0-9's implementations keep
    #: (``spec09.state.state_of`` finds it here; see ``classes09``)
    classes09: Spec09State = field(default_factory=Spec09State)


def state_of(ch: Channel) -> DraftState:
    state = ch.dialect_state
    assert isinstance(state, DraftState)
    return state
