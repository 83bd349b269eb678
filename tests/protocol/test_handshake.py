"""The connection class's state machine (``amqp_protocol.handshake``), for both roles and every
version: the order of start, secure, tune, open and close, the reply code of a method out of
order, and the negotiation of channel-max, frame-max and heartbeat."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amqp_protocol import (
    KNOWN_SPECS,
    SPEC_0_8,
    SPEC_0_9,
    SPEC_0_9_1,
    SPEC_0_10,
    Method,
    Spec,
    errors,
)
from amqp_protocol.handshake import Handshake, Role, State, Tuning, negotiate, negotiate_heartbeat

SPECS = pytest.mark.parametrize("spec", KNOWN_SPECS, ids=lambda s: s.label)
OFFER = Tuning(channel_max=2047, frame_max=131072, heartbeat=60)

#: The opening of a connection as both peers build it, one step a method.
_OPENING: list[tuple[Role, Callable[[Handshake], Method]]] = [
    ("server", lambda h: h.start((0, 9), {"product": "test"}, b"PLAIN AMQPLAIN", b"en_US")),
    ("client", lambda h: h.start_ok({"product": "test"}, "PLAIN", b"\0guest\0guest", "en_US")),
    ("server", lambda h: h.tune(OFFER.channel_max, OFFER.frame_max, OFFER.heartbeat)),
    ("client", lambda h: h.tune_ok(0, 0, None)),
    ("client", lambda h: h.open("/")),
    ("server", lambda h: h.open_ok()),
]


def _states(*machines: Handshake) -> set[State]:
    """The states ``machines`` are in. Read through a call, so that mypy does not carry an
    earlier assertion's narrowing of ``state`` past the calls that change it."""
    return {machine.state for machine in machines}


def _peers(spec: Spec, until: State) -> tuple[Handshake, Handshake]:
    """A server's and a client's machine that opened a connection up to ``until``, each
    receiving what the other built."""
    machines: dict[Role, Handshake] = {
        "server": Handshake("server", spec),
        "client": Handshake("client", spec),
    }
    for sender, build in _OPENING:
        if machines["server"].state is until:
            break
        receiver = machines["client" if sender == "server" else "server"]
        receiver.receive(build(machines[sender]))
        assert receiver.state is machines[sender].state
    assert machines["server"].state is until
    return machines["server"], machines["client"]


def _in_state(spec: Spec, role: Role, state: State) -> Handshake:
    """``role``'s machine in ``state``; SECURE, REFUSED and CLOSING are reached from LOGIN
    and OPEN."""
    start = {
        State.SECURE: State.LOGIN,
        State.REFUSED: State.LOGIN,
        State.CLOSING: State.OPEN,
        State.CLOSING_BOTH: State.OPEN,
    }
    server, client = _peers(spec, start.get(state, state))
    if state is State.SECURE:
        client.receive(server.secure(b"challenge"))
    elif state is State.REFUSED:
        server.refuse_login()
    elif state in (State.CLOSING, State.CLOSING_BOTH):
        client.receive(server.close(320, "CONNECTION_FORCED - shutdown"))
        if state is State.CLOSING_BOTH:
            server.receive(client.close(200, "Goodbye"))
    machine = server if role == "server" else client
    assert machine.state is state
    return machine


@SPECS
def test_both_roles_open_a_connection_through_start_tune_and_open(spec: Spec) -> None:
    server, client = _peers(spec, State.OPEN)
    assert server.state is client.state is State.OPEN
    assert server.mechanism == client.mechanism == "PLAIN"


@SPECS
def test_secure_rounds_repeat_until_the_server_tunes(spec: Spec) -> None:
    server, client = _peers(spec, State.LOGIN)
    for challenge in (b"first", b"second"):
        assert client.receive(server.secure(challenge)).challenge == challenge  # type: ignore[attr-defined]
        assert _states(client, server) == {State.SECURE}
        server.receive(client.secure_ok(b"answer"))
        assert _states(client, server) == {State.LOGIN}
    assert server.mechanism == "PLAIN"  # the start-ok's, for every round
    client.receive(server.tune(0, 0, 0))
    assert client.state is State.TUNE


#: What the server may receive from the client in each state (written out, not read from the
#: machine's table, so that the table is checked against it).
_SERVER_ACCEPTS = {
    State.START: {"connection.start-ok"},
    State.LOGIN: set(),
    State.SECURE: {"connection.secure-ok"},
    State.REFUSED: set(),
    State.TUNE: {"connection.tune-ok"},
    State.OPEN_WAIT: {"connection.open"},
    State.OPENING: set(),
    State.OPEN: {"connection.update-secret"},
    State.CLOSING: {"connection.close-ok"},
    State.CLOSING_BOTH: {"connection.close-ok"},
}
_CLIENT_ACCEPTS = {
    State.HEADER: {"connection.start"},
    State.START: set(),
    State.LOGIN: {"connection.secure", "connection.tune"},
    State.SECURE: set(),
    State.TUNE: set(),
    State.OPEN_WAIT: set(),
    State.OPENING: {"connection.open-ok", "connection.redirect"},
    State.OPEN: {"connection.blocked", "connection.unblocked", "connection.update-secret-ok"},
    State.CLOSING: {"connection.close-ok"},
    State.CLOSING_BOTH: {"connection.close-ok"},
}
_CASES = [
    (spec, role, state, name)
    for spec in KNOWN_SPECS
    for role, accepts in (("server", _SERVER_ACCEPTS), ("client", _CLIENT_ACCEPTS))
    for state in accepts
    for name in spec.methods
    if name.startswith("connection.")
]


@pytest.mark.parametrize(
    ("spec", "role", "state", "name"),
    _CASES,
    ids=[f"{s.label}-{r}-{st.value}-{n}" for s, r, st, n in _CASES],
)
def test_a_method_out_of_order_is_503_while_opening_and_504_once_open(
    spec: Spec, role: Role, state: State, name: str
) -> None:
    machine = _in_state(spec, role, state)
    accepts = (_SERVER_ACCEPTS if role == "server" else _CLIENT_ACCEPTS)[state]
    method = spec.method(name)()
    if name in accepts or (name == "connection.close" and state is not State.CLOSING_BOTH):
        assert machine.receive(method) is method
        assert machine.state is not state or state in (State.OPEN, State.CLOSING)
        return
    with pytest.raises(errors.AMQPError) as caught:
        machine.receive(method)
    err = caught.value
    if state is State.OPEN:  # RabbitMQ 4's answer
        assert type(err) is errors.ChannelError
        assert err.reply_text == "CHANNEL_ERROR - unexpected method in connection state running"
    else:
        assert type(err) is errors.CommandInvalid
        assert err.reply_text == f"COMMAND_INVALID - unexpected {name} in state {state.value}"
    assert (err.class_id, err.method_id) == (method.CLASS_ID, method.METHOD_ID)
    assert machine.state is state


@pytest.mark.parametrize("role", ["server", "client"])
def test_a_peer_cannot_send_what_the_other_is_due_to_send(role: Role) -> None:
    machine = _in_state(SPEC_0_9_1, role, State.START)
    with pytest.raises(ValueError):
        machine.open_ok() if role == "server" else machine.tune(0, 0, 0)
    assert machine.state is State.START


@SPECS
def test_a_channel_method_before_open_ok_is_504_channel_error(spec: Spec) -> None:
    machine = _in_state(spec, "server", State.OPEN_WAIT)
    channel_open = spec.method("channel.open")()
    with pytest.raises(errors.ChannelError) as caught:
        machine.check_channel_method(channel_open)
    assert caught.value.reply_code == 504
    assert caught.value.reply_text == "CHANNEL_ERROR - expected 'connection.open'"
    assert (caught.value.class_id, caught.value.method_id) == (
        channel_open.CLASS_ID,
        channel_open.METHOD_ID,
    )
    machine.receive(spec.method("connection.open")())
    machine.open_ok()
    machine.check_channel_method(channel_open)  # open: no error


def test_a_refused_login_accepts_only_a_close() -> None:
    server = _in_state(SPEC_0_9_1, "server", State.LOGIN)
    server.refuse_login()
    with pytest.raises(ValueError):
        server.tune(0, 0, 0)
    server.close(403, "ACCESS_REFUSED - Login was refused")
    assert _states(server) == {State.CLOSING}
    server.receive(SPEC_0_9_1.method("connection.close-ok")())
    assert _states(server) == {State.CLOSED}


@SPECS
def test_close_is_answered_with_close_ok_and_both_may_close_at_once(spec: Spec) -> None:
    server, client = _peers(spec, State.OPEN)
    client.receive(server.close(320, "CONNECTION_FORCED"))
    server.receive(client.close(200, "Goodbye"))  # sent before it saw the server's
    assert _states(server, client) == {State.CLOSING_BOTH}
    server.receive(client.close_ok())
    assert _states(server, client) == {State.CLOSING}
    client.receive(server.close_ok())
    assert _states(server, client) == {State.CLOSED}


@pytest.mark.parametrize("spec", [SPEC_0_9, SPEC_0_8, SPEC_0_10], ids=lambda s: s.label)
def test_versions_before_0_9_1_open_with_insist_and_may_be_redirected(spec: Spec) -> None:
    server, client = _peers(spec, State.OPEN_WAIT)
    opened: Any = server.receive(client.open("/", insist=True))
    assert opened.insist is True
    redirect: Any = client.receive(server.redirect("other:5672", "other:5672 third"))
    assert (redirect.host, redirect.known_hosts) == ("other:5672", "other:5672 third")
    assert server.state is client.state is State.CLOSED


def test_0_9_1_has_no_insist_and_no_redirect() -> None:
    server, client = _peers(SPEC_0_9_1, State.OPEN_WAIT)
    opened = server.receive(client.open("/vh"))
    assert "insist" not in type(opened).__slots__
    with pytest.raises(ValueError, match="no connection.redirect"):
        server.redirect("other", "")
    assert server.state is State.OPENING


# -- negotiation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs", "agreed"),
    [(131072, 65536, 65536), (4096, 131072, 4096), (0, 131072, 131072), (2047, 0, 2047), (0, 0, 0)],
)
def test_limits_take_the_lower_and_zero_means_no_limit(ours: int, theirs: int, agreed: int) -> None:
    assert negotiate(ours, theirs) == agreed


@pytest.mark.parametrize(
    ("ours", "theirs", "agreed"),
    [(None, 60, 60), (0, 60, 0), (10, 60, 10), (120, 60, 60), (10, 0, 10), (None, 0, 0)],
)
def test_heartbeat_unset_takes_the_servers_and_zero_from_us_disables(
    ours: int | None, theirs: int, agreed: int
) -> None:
    assert negotiate_heartbeat(ours, theirs) == agreed


@pytest.mark.parametrize(
    ("ours", "offer", "agreed"),
    [
        ((0, 0, None), Tuning(2047, 131072, 60), Tuning(2047, 131072, 60)),
        ((100, 8192, 10), Tuning(2047, 131072, 60), Tuning(100, 8192, 10)),
        ((0, 0, 0), Tuning(0, 0, 0), Tuning(65535, 0, 0)),  # channel-max: the highest number
        ((5000, 0, 30), Tuning(2047, 0, 0), Tuning(2047, 0, 30)),
    ],
)
def test_the_clients_tune_ok_carries_the_agreed_values(
    ours: tuple[int, int, int | None], offer: Tuning, agreed: Tuning
) -> None:
    server, client = _peers(SPEC_0_9_1, State.LOGIN)
    client.receive(server.tune(offer.channel_max, offer.frame_max, offer.heartbeat))
    tune_ok: Any = client.tune_ok(*ours)
    assert client.tuning == agreed
    assert client.state is State.OPEN_WAIT
    assert (tune_ok.channel_max, tune_ok.frame_max, tune_ok.heartbeat) == (
        agreed.channel_max,
        agreed.frame_max,
        agreed.heartbeat,
    )


def _tuned_server(spec: Spec = SPEC_0_9_1) -> Handshake:
    server = _in_state(spec, "server", State.LOGIN)
    server.tune(OFFER.channel_max, OFFER.frame_max, OFFER.heartbeat)
    return server


def _tune_ok(channel_max: int, frame_max: int, heartbeat: int = 0) -> Any:
    return SPEC_0_9_1.method("connection.tune-ok")(
        channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat
    )


def test_the_server_reads_zero_in_tune_ok_as_its_own_limit() -> None:
    server = _tuned_server()
    assert server.accept_tuning(server.receive(_tune_ok(0, 0, 5))) == Tuning(2047, 131072, 5)
    assert server.tuning == Tuning(2047, 131072, 5)


@pytest.mark.spec_rule("connection.tune-ok.channel-max:upper-limit")
def test_a_channel_max_over_the_offer_is_530_not_allowed() -> None:
    with pytest.raises(errors.NotAllowed) as caught:
        _tuned_server().accept_tuning(_tune_ok(2048, 0))
    assert caught.value.reply_code == 530
    assert caught.value.reply_text == (
        "NOT_ALLOWED - negotiated channel_max = 2048 is higher than the maximum allowed value "
        "(2047)"
    )


@pytest.mark.spec_rule("connection.tune-ok.frame-max:upper-limit")
@pytest.mark.spec_rule("connection.tune-ok.frame-max:minimum")
@pytest.mark.parametrize("frame_max", [131073, 4095])
def test_a_frame_max_over_the_offer_or_under_frame_min_size_is_530(frame_max: int) -> None:
    with pytest.raises(errors.NotAllowed) as caught:
        _tuned_server().accept_tuning(_tune_ok(0, frame_max))
    assert caught.value.reply_text == f"NOT_ALLOWED - frame_max={frame_max} outside 4096..131072"
