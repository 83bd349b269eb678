"""The draft's dtx-demarcation (100) and dtx-coordination (105): work between start and end
is held for the branch, which prepare, commit, rollback and recover settle from any channel
of the vhost. The draft's 503/530/540 are hard errors (its constants), so the connection
closes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from broker.server.spec010 import dtx
from tests.spec09.peer import Peer

XA_OK, XA_RBROLLBACK, XA_RDONLY = 0, 1, 7

rule = pytest.mark.spec010_rule


@pytest.fixture
def xid(name: str) -> bytes:
    """A transaction branch identifier no other test uses (branches are the server's)."""
    return name.encode()


def _start(peer: Peer, xid: bytes, **fields: Any) -> int:
    return int(peer.call(1, "dtx-demarcation.start", xid=xid, **fields).status)


def _end(peer: Peer, xid: bytes, **fields: Any) -> int:
    return int(peer.call(1, "dtx-demarcation.end", xid=xid, **fields).status)


def _publish_in_branch(peer: Peer, queue: str, xid: bytes, suspend: bool = False) -> None:
    """Publish "in-branch" to ``queue`` in branch ``xid`` of a dtx channel, and end it."""
    peer.call(1, "queue.declare", queue=queue)
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    peer.send_content(1, "basic.publish", b"in-branch", exchange="", routing_key=queue)
    assert _end(peer, xid, suspend=suspend) == XA_OK


def _peer(peer_factory: Callable[..., Peer]) -> Peer:
    peer = peer_factory()
    peer.open_channel(1)
    return peer


def _commit(peer: Peer, xid: bytes, one_phase: bool = True) -> int:
    return int(peer.call(1, "dtx-coordination.commit", xid=xid, one_phase=one_phase).status)


def _consume_in_branch(peer: Peer, queue: str, xid: bytes) -> None:
    """Start branch ``xid`` on a dtx channel and get and ack the message "consumed" of
    ``queue`` in it."""
    peer.call(1, "queue.declare", queue=queue)
    peer.send_content(1, "basic.publish", b"consumed", exchange="", routing_key=queue)
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    peer.send(1, "basic.get", queue=queue)
    got = peer.expect(1, "basic.get-ok")
    peer.send(1, "basic.ack", delivery_tag=got.method.delivery_tag)


@rule("dtx-demarcation:transactionality", "dtx-demarcation.end:success")
def test_rule_dtx_demarcation_transactionality_work_in_a_branch_waits_for_its_commit(
    peer: Peer, name: str, xid: bytes
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.send(1, "dtx-demarcation.select")
    peer.send_content(1, "basic.publish", b"outside", exchange="", routing_key=name)
    assert peer.message_count(name) == 1  # outside start/end: not transactional
    assert _start(peer, xid) == XA_OK
    peer.send_content(1, "basic.publish", b"inside", exchange="", routing_key=name)
    assert peer.message_count(name) == 1
    assert _end(peer, xid) == XA_OK
    assert _commit(peer, xid) == XA_OK
    assert peer.message_count(name) == 2


@rule("dtx-coordination.prepare:obligation-2")
def test_two_phase_commit_from_another_connection_publishes_and_settles_acks(
    peer_factory: Callable[..., Peer], name: str, xid: bytes
) -> None:
    worker, coordinator = _peer(peer_factory), _peer(peer_factory)
    _consume_in_branch(worker, name, xid)
    worker.send_content(1, "basic.publish", b"produced", exchange="", routing_key=name)
    assert _end(worker, xid) == XA_OK
    assert coordinator.call(1, "dtx-coordination.prepare", xid=xid).status == XA_OK
    recovered = coordinator.call(1, "dtx-coordination.recover", startscan=True, endscan=True)
    assert xid in recovered.in_doubt["xids"]
    assert _commit(coordinator, xid, one_phase=False) == XA_OK
    worker.send(1, "basic.get", queue=name)
    assert bytes(worker.expect(1, "basic.get-ok").body) == b"produced"
    assert coordinator.message_count(name) == 0


def test_rollback_drops_publishes_and_requeues_what_the_branch_consumed(
    peer: Peer, name: str, xid: bytes
) -> None:
    _consume_in_branch(peer, name, xid)
    peer.send_content(1, "basic.publish", b"produced", exchange="", routing_key=name)
    assert _end(peer, xid) == XA_OK
    assert peer.call(1, "dtx-coordination.rollback", xid=xid).status == XA_OK
    peer.send(1, "basic.get", queue=name)
    assert bytes(peer.expect(1, "basic.get-ok").body) == b"consumed"
    assert peer.message_count(name) == 0


def test_rule_dtx_coordination_prepare_ok_a_branch_without_work_is_read_only(
    peer: Peer, xid: bytes
) -> None:
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    assert _end(peer, xid) == XA_OK
    assert peer.call(1, "dtx-coordination.prepare", xid=xid).status == XA_RDONLY
    peer.send(1, "dtx-coordination.commit", xid=xid, one_phase=False)
    assert peer.error(1) == ("channel", 404)  # committed by preparing: forgotten


@rule("dtx-demarcation.end.fail:failure")
def test_rule_dtx_demarcation_end_fail_failure_marks_the_branch_rollback_only(
    peer: Peer, name: str, xid: bytes
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    peer.send_content(1, "basic.publish", b"failed", exchange="", routing_key=name)
    assert _end(peer, xid, fail=True) == XA_RBROLLBACK
    assert _commit(peer, xid) == XA_RBROLLBACK
    assert peer.message_count(name) == 0


@rule("dtx-demarcation.end.suspend:resume")
def test_rule_dtx_demarcation_end_suspend_resume_a_suspended_branch_is_resumed_by_start(
    peer: Peer, name: str, xid: bytes
) -> None:
    _publish_in_branch(peer, name, xid, suspend=True)
    assert _start(peer, xid, resume=True) == XA_OK
    peer.send_content(1, "basic.publish", b"after", exchange="", routing_key=name)
    assert _end(peer, xid) == XA_OK
    assert peer.message_count(name) == 0
    assert _commit(peer, xid) == XA_OK
    assert peer.message_count(name) == 2


@rule("dtx-demarcation.end:session-closed")
def test_rule_dtx_demarcation_end_session_closed_associated_branch_becomes_rollback_only(
    peer_factory: Callable[..., Peer], name: str, xid: bytes
) -> None:
    worker, coordinator = _peer(peer_factory), _peer(peer_factory)
    _consume_in_branch(worker, name, xid)
    worker.call(1, "channel.close", reply_code=200, reply_text="ok")
    assert coordinator.message_count(name) == 0  # the branch still holds the consumed message
    assert _commit(coordinator, xid) == XA_RBROLLBACK
    assert coordinator.message_count(name) == 1


@rule("dtx-coordination.set-timeout:effective", "dtx-coordination.set-timeout:reset")
def test_set_timeout_is_effective_and_zero_resets_it(peer: Peer, xid: bytes) -> None:
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    peer.send(1, "dtx-coordination.set-timeout", xid=xid, timeout=30)
    assert peer.call(1, "dtx-coordination.get-timeout", xid=xid).timeout == 30
    peer.send(1, "dtx-coordination.set-timeout", xid=xid, timeout=0)
    assert peer.call(1, "dtx-coordination.get-timeout", xid=xid).timeout == 0


@rule("dtx-coordination.recover:must-be-started")
def test_rule_dtx_coordination_recover_must_be_started(peer: Peer) -> None:
    peer.send(1, "dtx-coordination.recover", startscan=False, endscan=False)
    assert peer.error(1) == ("connection", 503)


@rule("dtx-coordination.recover:start-end")
def test_rule_dtx_coordination_recover_start_end_one_call_scans_and_ends(peer: Peer) -> None:
    peer.call(1, "dtx-coordination.recover", startscan=True, endscan=True)
    peer.send(1, "dtx-coordination.recover", startscan=False, endscan=False)
    assert peer.error(1) == ("connection", 503)


@rule("dtx-coordination.recover.startscan:recovery-already-open")
def test_startscan_during_a_scan_restarts_it(peer: Peer, name: str, xid: bytes) -> None:
    _publish_in_branch(peer, name, xid)
    peer.call(1, "dtx-coordination.prepare", xid=xid)
    peer.call(1, "dtx-coordination.recover", startscan=True)
    again = peer.call(1, "dtx-coordination.recover", startscan=True)  # no error: restarted
    assert xid in again.in_doubt["xids"]
    assert xid in peer.call(1, "dtx-coordination.recover", endscan=True).in_doubt["xids"]
    peer.send(1, "dtx-coordination.recover")  # the scan ended
    assert peer.error(1) == ("connection", 503)


@rule("dtx-coordination.recover-ok.in-doubt:xid-sequence")
def test_rule_dtx_coordination_recover_ok_in_doubt_xid_sequence(
    peer: Peer, name: str, xid: bytes
) -> None:
    _publish_in_branch(peer, name, xid)
    peer.call(1, "dtx-coordination.prepare", xid=xid)
    reply = peer.call(1, "dtx-coordination.recover", startscan=True, endscan=False)
    assert list(reply.in_doubt) == ["xids"] and xid in reply.in_doubt["xids"]
    # the scan stays open: a recover with neither flag continues it
    assert xid in peer.call(1, "dtx-coordination.recover").in_doubt["xids"]
    peer.call(1, "dtx-coordination.rollback", xid=xid)
    assert xid not in peer.call(1, "dtx-coordination.recover", endscan=True).in_doubt["xids"]


@pytest.mark.parametrize(
    ("method", "fields"),
    [
        pytest.param(
            "dtx-coordination.commit",
            {"one_phase": True},
            marks=rule("dtx-coordination.commit.xid:unknown-xid"),
        ),
        pytest.param(
            "dtx-coordination.prepare", {}, marks=rule("dtx-coordination.prepare.xid:unknown-xid")
        ),
        pytest.param(
            "dtx-coordination.rollback", {}, marks=rule("dtx-coordination.rollback.xid:unknown-xid")
        ),
        pytest.param(
            "dtx-coordination.forget", {}, marks=rule("dtx-coordination.forget.xid:unknown-xid")
        ),
        pytest.param(
            "dtx-coordination.get-timeout",
            {},
            marks=rule("dtx-coordination.get-timeout.xid:unknown-xid"),
        ),
        pytest.param(
            "dtx-coordination.set-timeout",
            {"timeout": 5},
            marks=rule("dtx-coordination.set-timeout.xid:unknown-xid"),
        ),
    ],
)
def test_rule_dtx_coordination_xid_unknown_xid_is_404(
    peer: Peer, method: str, fields: dict[str, object], xid: bytes
) -> None:
    peer.send(1, method, xid=b"never-started", **fields)
    assert peer.error(1) == ("channel", 404)


@pytest.mark.parametrize(
    ("method", "fields"),
    [
        pytest.param(
            "dtx-coordination.commit",
            {"one_phase": True},
            marks=rule(
                "dtx-coordination.commit.xid:not-disassociated",
                "dtx-coordination.commit:command-invalid",
            ),
        ),
        pytest.param(
            "dtx-coordination.prepare",
            {},
            marks=rule(
                "dtx-coordination.prepare.xid:not-disassociated",
                "dtx-coordination.prepare:command-invalid",
            ),
        ),
        pytest.param(
            "dtx-coordination.rollback",
            {},
            marks=rule(
                "dtx-coordination.rollback.xid:not-disassociated",
                "dtx-coordination.rollback:command-invalid",
            ),
        ),
        pytest.param(
            "dtx-coordination.forget",
            {},
            marks=rule(
                "dtx-coordination.forget.xid:not-disassociated",
                "dtx-coordination.forget:command-invalid",
            ),
        ),
    ],
)
def test_rule_dtx_coordination_xid_not_disassociated_is_503(
    peer: Peer, method: str, fields: dict[str, bool], xid: bytes
) -> None:
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    peer.send(1, method, xid=xid, **fields)
    assert peer.error(1) == ("connection", 503)


@rule("dtx-coordination.commit.one-phase:prerequisite")
def test_rule_dtx_coordination_commit_one_phase_prerequisite(
    peer: Peer, name: str, xid: bytes
) -> None:
    _publish_in_branch(peer, name, xid)
    peer.send(1, "dtx-coordination.commit", xid=xid, one_phase=False)
    assert peer.error(1) == ("connection", 503)


@rule("dtx-coordination.commit.one-phase:validity")
def test_rule_dtx_coordination_commit_one_phase_validity(peer: Peer, name: str, xid: bytes) -> None:
    _publish_in_branch(peer, name, xid)
    peer.call(1, "dtx-coordination.prepare", xid=xid)
    peer.send(1, "dtx-coordination.commit", xid=xid, one_phase=True)
    assert peer.error(1) == ("connection", 503)


#: (the rule, or a pytest id where no rule names the refusal, whether the channel selects
#: dtx, whether it starts the branch, the method, its fields besides the xid, the xid, the
#: reply code of the refusal)
_DEMARCATION_REFUSALS = [
    ("dtx-demarcation.start:command-invalid", False, False, "start", {}, "x", 503),
    (
        "dtx-demarcation.start:join-and-resume",
        True,
        False,
        "start",
        {"join": True, "resume": True},
        "x",
        503,
    ),
    ("dtx-demarcation.start.join:unsupported", True, False, "start", {"join": True}, "x", 540),
    ("empty_xid_is_542_invalid_argument", True, False, "start", {}, "", 542),
    ("dtx-demarcation.start:command-invalid", True, True, "start", {}, "x-2", 503),
    ("dtx-demarcation.end:command-invalid", False, False, "end", {}, "x", 503),
    (
        "dtx-demarcation.end:suspend-and-fail",
        True,
        True,
        "end",
        {"suspend": True, "fail": True},
        "x",
        503,
    ),
    ("dtx-demarcation.end.xid:not-associated", True, True, "end", {}, "x-other", 503),
]


@pytest.mark.parametrize(
    ("selects", "starts", "method", "fields", "which", "code"),
    [
        pytest.param(*case[1:], marks=rule(case[0]) if ":" in case[0] else (), id=case[0])
        for case in _DEMARCATION_REFUSALS
    ],
)
def test_demarcation_refusal(
    peer: Peer,
    xid: bytes,
    selects: bool,
    starts: bool,
    method: str,
    fields: dict[str, bool],
    which: str,
    code: int,
) -> None:
    """``which``: the xid of the refused method, "x" the started one, "" an empty one."""
    if selects:
        peer.send(1, "dtx-demarcation.select")
    if starts:
        assert _start(peer, xid) == XA_OK
    refused = which.replace("x", xid.decode(), 1).encode()
    peer.send(1, f"dtx-demarcation.{method}", xid=refused, **fields)
    assert peer.error(1) == ("connection", code)


@rule("dtx-demarcation.start:already-known", "dtx-demarcation.start.xid:unknown-xid")
def test_rule_dtx_demarcation_start_already_known_is_530(peer: Peer, xid: bytes) -> None:
    peer.send(1, "dtx-demarcation.select")
    assert _start(peer, xid) == XA_OK
    assert _end(peer, xid) == XA_OK
    peer.send(1, "dtx-demarcation.start", xid=xid)
    assert peer.error(1) == ("connection", 530)


def test_tx_select_on_a_dtx_channel_is_503(peer: Peer) -> None:
    peer.send(1, "dtx-demarcation.select")
    peer.send(1, "tx.select")
    assert peer.error(1) == ("connection", 503)


def test_a_commit_from_another_connection_frees_the_consumers_prefetch(
    peer_factory: Callable[..., Peer], name: str, xid: bytes
) -> None:
    """The ack in the branch settles at the commit another connection sends: until then
    the consumer's prefetch of 1 holds the next delivery back."""
    worker, coordinator = _peer(peer_factory), _peer(peer_factory)
    worker.call(1, "queue.declare", queue=name)
    for body in (b"first", b"second"):
        worker.send_content(1, "basic.publish", body, exchange="", routing_key=name)
    worker.send(1, "basic.qos", prefetch_count=1)
    worker.call(1, "basic.consume", queue=name)
    first = worker.expect(1, "basic.deliver")
    worker.send(1, "dtx-demarcation.select")
    assert _start(worker, xid) == XA_OK
    worker.send(1, "basic.ack", delivery_tag=first.method.delivery_tag)
    assert _end(worker, xid) == XA_OK
    worker.nothing(1, "basic.deliver")
    assert _commit(coordinator, xid) == XA_OK
    assert bytes(worker.expect(1, "basic.deliver").body) == b"second"


@pytest.mark.parametrize(
    "method",
    [
        pytest.param(
            "dtx-coordination.prepare", marks=rule("dtx-coordination.prepare:command-invalid")
        ),
        pytest.param(
            "dtx-coordination.forget", marks=rule("dtx-coordination.forget:command-invalid")
        ),
    ],
)
def test_preparing_again_or_forgetting_a_prepared_branch_is_503(
    peer: Peer, name: str, xid: bytes, method: str
) -> None:
    """Out of the class grammar: a prepared branch is committed or rolled back, never
    prepared twice, and only a heuristically completed one is forgotten."""
    _publish_in_branch(peer, name, xid)
    assert peer.call(1, "dtx-coordination.prepare", xid=xid).status == XA_OK
    peer.send(1, method, xid=xid)
    assert peer.error(1) == ("connection", 503)


class _FailsOnce:
    """Stands in for ``original``: the first call raises, later ones (the channel's
    teardown) go to it."""

    def __init__(self, original: Callable[..., Any]) -> None:
        self.original, self.failed = original, False

    def __call__(self, *args: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise RuntimeError("an internal failure the test injects")
        return self.original(*args)


@pytest.mark.parametrize(
    ("method", "fields"),
    [
        pytest.param("dtx-demarcation.end", {}, marks=rule("dtx-demarcation.end:internal-error")),
        pytest.param(
            "dtx-coordination.commit",
            {"one_phase": True},
            marks=rule("dtx-coordination.commit:internal-error"),
        ),
        pytest.param(
            "dtx-coordination.forget", {}, marks=rule("dtx-coordination.forget:internal-error")
        ),
        pytest.param(
            "dtx-coordination.get-timeout",
            {},
            marks=rule("dtx-coordination.get-timeout:internal-error"),
        ),
        pytest.param(
            "dtx-coordination.prepare", {}, marks=rule("dtx-coordination.prepare:internal-error")
        ),
        pytest.param(
            "dtx-coordination.recover",
            {"startscan": True},
            marks=rule("dtx-coordination.recover:internal-error"),
        ),
        pytest.param(
            "dtx-coordination.rollback", {}, marks=rule("dtx-coordination.rollback:internal-error")
        ),
        pytest.param(
            "dtx-coordination.set-timeout",
            {"timeout": 5},
            marks=rule("dtx-coordination.set-timeout:internal-error"),
        ),
    ],
)
def test_an_error_inside_a_dtx_method_is_541_internal_error(
    peer: Peer, xid: bytes, method: str, fields: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker runs in this process: the method's first step (end and recover read the
    channel's dtx state, the others look the branch up) is made to fail. 541 is a hard
    error in the draft's constants, so the connection closes."""
    if method in ("dtx-demarcation.end", "dtx-coordination.recover"):
        monkeypatch.setattr(dtx, "state_of", _FailsOnce(dtx.state_of))
    else:
        broken = _FailsOnce(dtx.Branches._known)
        monkeypatch.setattr(dtx.Branches, "_known", lambda *args: broken(*args))
    xid_field = {} if method == "dtx-coordination.recover" else {"xid": xid}
    peer.send(1, method, **xid_field, **fields)
    assert peer.error(1) == ("connection", 541)
