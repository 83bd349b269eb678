"""The classes the transitional 0-10 draft keeps from 0-9: access (30), file (70), stream (80)
and tunnel (110).

Their methods have the same class and method ids and the same fields in both XMLs, their
properties the same fields, and their rules say the same things under new names (the
draft's ``file.consume.exclusive:in-use`` is 0-9's ``file.consume.exclusive:01``), so the 0-9
dialect's implementations serve the draft as they are: ``spec09.access``, ``file``,
``stream_class`` and ``tunnel``. What they keep per channel is a ``Spec09State``, held in
the channel's ``DraftState.classes09``.

Where the draft differs it is in words only: tickets are valid "within the same session"
(rule access.request-ok:per-session), not the same channel; a session keeps its channel,
tickets included, while suspended and when resumed on another connection, so a ticket
follows its session and no other session's channel accepts it. The flow control the draft
names for file publishers is session.flow where 0-9 says channel.flow: a session's channel is
stopped with session.flow (``flow_publishers``).

Every method of the draft with a ticket field is checked against the channel's tickets, and
the 0-9 classes' methods against the user's permissions (``check``), as in 0-9.
"""

from __future__ import annotations

from ..abc import Channel, Connection
from ..dialect import ChannelHandler
from ..spec09 import (
    CLASS_CONTENT_HANDLERS,
    access,
    close_classes,
    connection_class,
    file,
    stream_class,
)
from ..spec09.lanes import register_contents
from .state import state_of

HANDLERS: dict[str, ChannelHandler] = {}
for _module in (access, file, stream_class):
    HANDLERS.update(_module.HANDLERS)
CONTENT_HANDLERS = CLASS_CONTENT_HANDLERS
check = access.check


def _flow_method(ch: Channel) -> str:
    return "channel.flow" if state_of(ch).session is None else "session.flow"


def flow_publishers(conn: Connection, blocked: bool) -> None:
    """The broker's memory crossed its watermark while ``conn`` publishes: as in 0-9 its
    publishers are stopped (and later restarted), with session.flow on a session's channel
    as rule file:no-discard asks ("The server MUST use the Session.Flow method to slow or
    stop a file message publisher"), channel.flow on a channel opened by channel.open."""
    connection_class.flow_publishers(conn, not blocked, _flow_method)


__all__ = [
    "CONTENT_HANDLERS",
    "HANDLERS",
    "check",
    "close_classes",
    "flow_publishers",
    "register_contents",
]
