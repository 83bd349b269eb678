"""The dtx class: dtx.select puts a channel in distributed-transaction mode, dtx.start
associates it with the identifier of a transaction an external coordinator manages
(0-9 defines no commit or rollback here: those belong to the coordinator)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from amqp_protocol import errors
from amqp_protocol.generated.any_version import DtxSelect, DtxStart

from .state import state_of

if TYPE_CHECKING:
    from ..abc import Channel


def _select(ch: Channel, m: DtxSelect) -> None:
    state_of(ch).dtx_selected = True
    ch.send(ch.conn.spec.method("dtx.select-ok")())


def _start(ch: Channel, m: DtxStart) -> None:
    ext = state_of(ch)
    if not ext.dtx_selected:
        raise errors.PreconditionFailed("PRECONDITION_FAILED - dtx.start before dtx.select")
    if not m.dtx_identifier:
        raise errors.PreconditionFailed("PRECONDITION_FAILED - empty dtx-identifier")
    ext.dtx_identifier = m.dtx_identifier
    ch.send(ch.conn.spec.method("dtx.start-ok")())


HANDLERS = {"dtx.select": _select, "dtx.start": _start}
