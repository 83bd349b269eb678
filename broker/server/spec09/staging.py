"""Partly transferred content that outlives a connection: staged files (file.open /
file.stage) and message-class checkpoints (message.checkpoint / message.resume).

Kept per broker, keyed by virtual host, user and the sender's identifier, so a client that
lost its connection resumes where it stopped: file.open-ok reports the octets already
staged, message.resume the checkpointed offset.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..abc import Channel


@dataclass
class Staged:
    data: bytes
    properties: Any = None  #: the file properties, once staging completed
    complete: bool = False


_areas: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], Staged]] = (
    weakref.WeakKeyDictionary()
)


def _area(channel: Channel) -> dict[tuple[str, str, str], Staged]:
    return _areas.setdefault(channel.conn.server, {})


def _key(channel: Channel, identifier: str) -> tuple[str, str, str]:
    return (channel.vhost.name, channel.conn.user or "", identifier)


def get(channel: Channel, identifier: str) -> Staged | None:
    return _area(channel).get(_key(channel, identifier))


def put(channel: Channel, identifier: str, staged: Staged) -> None:
    _area(channel)[_key(channel, identifier)] = staged


def pop(channel: Channel, identifier: str) -> Staged | None:
    return _area(channel).pop(_key(channel, identifier), None)
