"""The draft's distributed transactions: dtx-demarcation (100) and dtx-coordination (105).

A channel selects dtx (``dtx-demarcation.select``, which the draft answers with nothing),
then does work on behalf of a transaction branch between ``start`` and ``end``: while a
branch is associated with the channel, the channel's publishes and acknowledgements are held
in the branch's ``tx.Transaction`` exactly as tx.select holds them (the tx class's machinery,
``state.tx``), and outside start/end blocks they act at once (rule
dtx-demarcation:transactionality). A branch is known to the server by its xid within a
virtual host, beyond the channel and connection that started it; any channel of the vhost
may then prepare, commit, roll back or forget it (dtx-coordination), which the xa-* status
codes answer.

Not implemented: ``join`` (540, as the draft's rule start.join.unsupported allows);
heuristic completion (no branch is ever heuristically completed, so ``recover`` lists the
prepared ones and ``forget`` of a branch that is not is 503); timeouts are kept and
reported (set-/get-timeout) but never expire a branch. The draft names no 542
(invalid-argument) in a rule; an empty xid is refused with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from amqp_protocol import Method, errors
from amqp_protocol.generated.spec_0_10 import (
    DtxCoordinationCommit,
    DtxCoordinationCommitOk,
    DtxCoordinationForget,
    DtxCoordinationGetTimeout,
    DtxCoordinationGetTimeoutOk,
    DtxCoordinationPrepare,
    DtxCoordinationPrepareOk,
    DtxCoordinationRecover,
    DtxCoordinationRecoverOk,
    DtxCoordinationRollback,
    DtxCoordinationRollbackOk,
    DtxCoordinationSetTimeout,
    DtxDemarcationEnd,
    DtxDemarcationEndOk,
    DtxDemarcationStart,
    DtxDemarcationStartOk,
)

from ..abc import Channel
from ..dialect import ChannelHandler
from . import tx
from .state import DraftState, state_of

#: the draft's XA return codes (its xa-* constants)
XA_OK, XA_RBROLLBACK, XA_RDONLY = 0, 1, 7

#: the timeout get-timeout reports before set-timeout (0 resets to it): none
DEFAULT_TIMEOUT = 0


@dataclass(eq=False)
class Branch:
    """A transaction branch: its work (held publishes and acknowledgements), the channel it
    is associated with (None: ended or suspended), and where it is in the XA grammar."""

    xid: bytes
    #: the channel that started or resumed the branch last: its deliveries are settled
    #: there (a delivery counts against the prefetch of the channel it went to)
    origin: Channel
    work: tx.Transaction = field(default_factory=tx.Transaction)
    channel: Channel | None = None
    suspended: bool = False
    prepared: bool = False
    rollback_only: bool = False
    timeout: int = DEFAULT_TIMEOUT


def _selected(ch: Channel, m: Method) -> DraftState:
    """The channel's state, if it selected dtx (rule command-invalid of start and end)."""
    state = state_of(ch)
    if not state.dtx_selected:
        raise errors.CommandInvalid(f"COMMAND_INVALID - {m.NAME} before dtx-demarcation.select")
    return state


class Branches:
    """The transaction branches of the server's 0-10 channels, by vhost and xid."""

    def __init__(self) -> None:
        self._branches: dict[tuple[str, bytes], Branch] = {}

    def _key(self, ch: Channel, xid: bytes) -> tuple[str, bytes]:
        return (ch.vhost.name, xid)

    def _known(self, ch: Channel, xid: bytes) -> Branch:
        branch = self._branches.get(self._key(ch, xid))
        if branch is None:
            raise errors.NotFound(f"NOT_FOUND - unknown xid {xid!r}")
        return branch

    def _disassociated(self, ch: Channel, xid: bytes) -> Branch:
        branch = self._known(ch, xid)
        if branch.channel is not None or branch.suspended:
            raise errors.CommandInvalid(
                f"COMMAND_INVALID - xid {xid!r} is still associated with a session"
            )
        return branch

    def select(self, ch: Channel, m: object) -> None:
        state = state_of(ch)
        if state.tx is not None and not state.dtx_selected:
            raise errors.CommandInvalid("COMMAND_INVALID - the channel has selected tx")
        state.dtx_selected = True

    def start(self, ch: Channel, m: DtxDemarcationStart) -> None:
        state = _selected(ch, m)
        if m.join and m.resume:
            raise errors.CommandInvalid("COMMAND_INVALID - join and resume both set")
        if m.join:
            raise errors.NotImplemented_("NOT_IMPLEMENTED - dtx-demarcation.start join")
        if state.tx is not None:
            raise errors.CommandInvalid("COMMAND_INVALID - a branch is already associated")
        if not m.xid:
            raise errors.InvalidArgument("INVALID_ARGUMENT - empty xid")
        key = self._key(ch, m.xid)
        branch = self._branches.get(key)
        if m.resume:
            if branch is None or not branch.suspended:
                raise errors.CommandInvalid(f"COMMAND_INVALID - xid {m.xid!r} is not suspended")
            branch.suspended = False
        elif branch is not None:
            raise errors.NotAllowed(f"NOT_ALLOWED - xid {m.xid!r} is already known")
        else:
            branch = self._branches[key] = Branch(m.xid, ch)
        branch.channel = branch.origin = ch
        state.tx = branch.work
        ch.send(DtxDemarcationStartOk(status=XA_RBROLLBACK if branch.rollback_only else XA_OK))

    def end(self, ch: Channel, m: DtxDemarcationEnd) -> None:
        state = _selected(ch, m)
        if m.suspend and m.fail:
            raise errors.CommandInvalid("COMMAND_INVALID - suspend and fail both set")
        branch = self._branches.get(self._key(ch, m.xid))
        if branch is None or branch.channel is not ch:
            raise errors.CommandInvalid(
                f"COMMAND_INVALID - xid {m.xid!r} is not associated with the channel"
            )
        branch.channel, state.tx = None, None
        branch.suspended = m.suspend
        if m.fail:
            branch.rollback_only = True
        ch.send(DtxDemarcationEndOk(status=XA_RBROLLBACK if branch.rollback_only else XA_OK))

    def closing(self, ch: Channel) -> None:
        """The channel closes: the branch associated with it becomes rollback-only (rule
        dtx-demarcation.end:session-closed) and keeps its work for the coordinator."""
        state = state_of(ch)
        for branch in self._branches.values():
            if branch.channel is ch:
                branch.channel, branch.suspended, state.tx = None, False, None
                branch.rollback_only = True

    def _roll_back(self, ch: Channel, branch: Branch) -> None:
        """Drop the branch's publishes and requeue what it consumed (``ch``: the channel
        that rolls it back)."""
        del self._branches[self._key(ch, branch.xid)]
        acks = [item for _, item in branch.work.acks]
        if acks:
            branch.origin.settle("requeue", acks)

    def prepare(self, ch: Channel, m: DtxCoordinationPrepare) -> None:
        branch = self._disassociated(ch, m.xid)
        if branch.prepared:
            raise errors.CommandInvalid(f"COMMAND_INVALID - xid {m.xid!r} is prepared already")
        if branch.rollback_only:
            self._roll_back(ch, branch)
            ch.send(DtxCoordinationPrepareOk(status=XA_RBROLLBACK))
            return
        if not branch.work.publishes and not branch.work.acks:
            del self._branches[self._key(ch, m.xid)]  # read-only: committed by preparing
            ch.send(DtxCoordinationPrepareOk(status=XA_RDONLY))
            return
        branch.prepared = True
        ch.send(DtxCoordinationPrepareOk(status=XA_OK))

    def commit(self, ch: Channel, m: DtxCoordinationCommit) -> None:
        branch = self._disassociated(ch, m.xid)
        if m.one_phase == branch.prepared:
            raise errors.CommandInvalid(
                "COMMAND_INVALID - one-phase must be set exactly when the branch is not prepared"
            )
        if branch.rollback_only:
            self._roll_back(ch, branch)
            ch.send(DtxCoordinationCommitOk(status=XA_RBROLLBACK))
            return
        del self._branches[self._key(ch, m.xid)]
        tx.carry_out(ch, branch.work, took=branch.origin)
        ch.send(DtxCoordinationCommitOk(status=XA_OK))

    def rollback(self, ch: Channel, m: DtxCoordinationRollback) -> None:
        self._roll_back(ch, self._disassociated(ch, m.xid))
        ch.send(DtxCoordinationRollbackOk(status=XA_OK))

    def forget(self, ch: Channel, m: DtxCoordinationForget) -> None:
        self._disassociated(ch, m.xid)
        raise errors.CommandInvalid(
            f"COMMAND_INVALID - xid {m.xid!r} is not heuristically completed"
        )

    def recover(self, ch: Channel, m: DtxCoordinationRecover) -> None:
        state = state_of(ch)
        if not (m.startscan or m.endscan or state.dtx_scanning):
            raise errors.CommandInvalid("COMMAND_INVALID - no recovery scan started")
        state.dtx_scanning = not m.endscan
        prepared = [
            branch.xid
            for (vhost, _), branch in self._branches.items()
            if vhost == ch.vhost.name and branch.prepared
        ]
        ch.send(DtxCoordinationRecoverOk(in_doubt={"xids": prepared}))

    def set_timeout(self, ch: Channel, m: DtxCoordinationSetTimeout) -> None:
        self._known(ch, m.xid).timeout = m.timeout or DEFAULT_TIMEOUT

    def get_timeout(self, ch: Channel, m: DtxCoordinationGetTimeout) -> None:
        ch.send(DtxCoordinationGetTimeoutOk(timeout=self._known(ch, m.xid).timeout))

    def handlers(self) -> dict[str, ChannelHandler]:
        return {
            "dtx-demarcation.select": self.select,
            "dtx-demarcation.start": self.start,
            "dtx-demarcation.end": self.end,
            "dtx-coordination.commit": self.commit,
            "dtx-coordination.forget": self.forget,
            "dtx-coordination.get-timeout": self.get_timeout,
            "dtx-coordination.prepare": self.prepare,
            "dtx-coordination.recover": self.recover,
            "dtx-coordination.rollback": self.rollback,
            "dtx-coordination.set-timeout": self.set_timeout,
        }
