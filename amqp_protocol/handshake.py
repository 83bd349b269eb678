"""The connection class's conversation (start, secure, tune, open, close) as one sans-IO state
machine, the same for the server and the client.

The grammar is the same in 0-8, 0-9, 0-9-1 and the transitional 0-10 draft::

    open-connection  = C:protocol-header S:START C:START-OK *challenge
                       S:TUNE C:TUNE-OK C:OPEN S:OPEN-OK | S:REDIRECT
    challenge        = S:SECURE C:SECURE-OK
    close-connection = C:CLOSE S:CLOSE-OK / S:CLOSE C:CLOSE-OK

0-9-1 has no connection.redirect (and no open's insist, no open-ok's known-hosts); RabbitMQ's
extensions add connection.blocked/unblocked and update-secret once the connection is open.
``_TRANSITIONS`` holds the whole order, as (state, method) -> next state, for what either
peer sends; ``_SENDERS`` says which peer may send each method.

The machine checks and records; it decides nothing. The application sends and receives the
frames (``Connection.send_method``), tells the machine of each connection method it receives
(``receive``: one out of order is 503 command-invalid, 504 once open) and builds its own with
it (``start``, ``tune``, ``open_ok``, ...: a method the other peer was due to send, or sent out
of order, is a ``ValueError``, a bug of the application). Which SASL mechanism to use and
whether the credentials are good, which virtual host to open, whether to redirect and which
policies to add to the spec's tuning rules (RabbitMQ refuses a tune-ok's channel-max 0) are
the application's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from . import errors
from .frames import FRAME_MIN_SIZE
from .methods import Method
from .spec import Spec

Role = Literal["client", "server"]


class State(enum.Enum):
    """Where the conversation is; the value names it in reply texts."""

    HEADER = "header"  #: the protocol header is agreed; the server is to send connection.start
    START = "start"  #: connection.start sent: the client is to answer start-ok
    LOGIN = "login"  #: start-ok or secure-ok in: the server is to send secure or tune
    SECURE = "secure"  #: connection.secure sent: the client is to answer secure-ok
    REFUSED = "refused"  #: the server refused the login: only a close may follow
    TUNE = "tune"  #: connection.tune sent: the client is to answer tune-ok
    OPEN_WAIT = "open-wait"  #: tune-ok in: the client is to send connection.open
    OPENING = "opening"  #: connection.open sent: the server is to answer open-ok or redirect
    OPEN = "open"
    CLOSING = "closing"  #: connection.close sent: the peer that got it is to answer close-ok
    CLOSING_BOTH = "closing-both"  #: both peers sent close: each is to answer with close-ok
    CLOSED = "closed"


#: The server's decision, after a start-ok or secure-ok, that the login failed: a step of the
#: table without a method (the server closes the connection, or the socket, later).
REFUSE_LOGIN = "refuse-login"

_ANY: tuple[Role, ...] = ("client", "server")
#: Who may send each connection method.
_SENDERS: dict[str, tuple[Role, ...]] = {
    "connection.start": ("server",),
    "connection.start-ok": ("client",),
    "connection.secure": ("server",),
    "connection.secure-ok": ("client",),
    "connection.tune": ("server",),
    "connection.tune-ok": ("client",),
    "connection.open": ("client",),
    "connection.open-ok": ("server",),
    "connection.redirect": ("server",),
    "connection.blocked": ("server",),
    "connection.unblocked": ("server",),
    "connection.update-secret": ("client",),
    "connection.update-secret-ok": ("server",),
    "connection.close": _ANY,
    "connection.close-ok": _ANY,
    REFUSE_LOGIN: ("server",),
}

#: The states in which either peer may still send connection.close.
_LIVE = tuple(set(State) - {State.CLOSING, State.CLOSING_BOTH, State.CLOSED})

#: (state, method sent by either peer) -> the state after it.
_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.HEADER, "connection.start"): State.START,
    (State.START, "connection.start-ok"): State.LOGIN,
    (State.LOGIN, "connection.secure"): State.SECURE,
    (State.SECURE, "connection.secure-ok"): State.LOGIN,
    (State.LOGIN, REFUSE_LOGIN): State.REFUSED,
    (State.LOGIN, "connection.tune"): State.TUNE,
    (State.TUNE, "connection.tune-ok"): State.OPEN_WAIT,
    (State.OPEN_WAIT, "connection.open"): State.OPENING,
    (State.OPENING, "connection.open-ok"): State.OPEN,
    (State.OPENING, "connection.redirect"): State.CLOSED,
    (State.OPEN, "connection.blocked"): State.OPEN,
    (State.OPEN, "connection.unblocked"): State.OPEN,
    (State.OPEN, "connection.update-secret"): State.OPEN,
    (State.OPEN, "connection.update-secret-ok"): State.OPEN,
    # Either peer may close, in any state; both may close at once (each then answers the
    # other's close with close-ok).
    **{(state, "connection.close"): State.CLOSING for state in _LIVE},
    (State.CLOSING, "connection.close"): State.CLOSING_BOTH,
    (State.CLOSING_BOTH, "connection.close-ok"): State.CLOSING,
    (State.CLOSING, "connection.close-ok"): State.CLOSED,
}


@dataclass(frozen=True, slots=True)
class Tuning:
    """The agreed channel-max, frame-max (0: no limit) and heartbeat (0: none)."""

    channel_max: int
    frame_max: int
    heartbeat: int


def negotiate(ours: int, theirs: int) -> int:
    """Tune negotiation of channel-max and frame-max: the lower, where 0 means no limit."""
    if ours == 0 or theirs == 0:
        return max(ours, theirs)
    return min(ours, theirs)


def negotiate_heartbeat(ours: int | None, theirs: int) -> int:
    """Heartbeat: None takes the server's; 0 from us means we want none (the spec's
    meaning for tune-ok); 0 from the server leaves it to us; otherwise the lower."""
    if ours is None:
        return theirs
    if ours == 0 or theirs == 0:
        return ours
    return min(ours, theirs)


class Handshake:
    """The connection class's state machine of one connection, for ``role``'s side."""

    def __init__(self, role: Role, spec: Spec) -> None:
        self.role = role
        self.spec = spec
        self.state = State.HEADER
        #: The last method of each name sent or received (the offer a tune-ok answers, the
        #: mechanism of a secure-ok's round).
        self._seen: dict[str, Method] = {}
        #: What tune and tune-ok agreed (None until tune-ok).
        self.tuning: Tuning | None = None

    @property
    def has_redirect(self) -> bool:
        """The version has connection.redirect, open's insist and open-ok's known-hosts."""
        return self.spec.has_method("connection.redirect")

    @property
    def mechanism(self) -> str:
        """The SASL mechanism of the start-ok (a secure-ok's response is in it too)."""
        start_ok: Any = self._seen["connection.start-ok"]
        return str(start_ok.mechanism)

    # -- the table ----------------------------------------------------------------------------

    def receive(self, method: Method) -> Method:
        """Check that the peer may send ``method`` now and move on; returns it. Out of order
        while the connection opens it is 503 command-invalid naming the method and the
        state; once it is open, 504 channel-error in RabbitMQ 4's words (measured on 4.0.5,
        for a start-ok, tune-ok, open, close-ok or blocked from a client)."""
        peer: Role = "client" if self.role == "server" else "server"
        next_state = self._next(method.NAME, peer)
        if next_state is None:
            err: errors.AMQPError
            if self.state is State.OPEN:
                err = errors.ChannelError(
                    "CHANNEL_ERROR - unexpected method in connection state running"
                )
            else:
                err = errors.CommandInvalid(
                    f"COMMAND_INVALID - unexpected {method.NAME} in state {self.state.value}"
                )
            raise err.with_culprit(method.CLASS_ID, method.METHOD_ID)
        self._move(method, next_state)
        return method

    def send(self, method: Method) -> Method:
        """Check that we may send ``method`` now (``ValueError`` if not) and move on; returns
        it, to be framed."""
        next_state = self._next(method.NAME, self.role)
        if next_state is None:
            raise ValueError(f"the {self.role} cannot send {method.NAME} in state {self.state}")
        self._move(method, next_state)
        return method

    def refuse_login(self) -> None:
        """Server: the credentials of the start-ok (or secure-ok) are refused; only a close
        may follow."""
        next_state = self._next(REFUSE_LOGIN, self.role)
        if next_state is None:
            raise ValueError(f"the {self.role} cannot refuse a login in state {self.state}")
        self.state = next_state

    def check_channel_method(self, method: Method) -> None:
        """A method on a channel other than 0 needs an open connection (504, RabbitMQ's
        words)."""
        if self.state is not State.OPEN:
            raise errors.ChannelError("CHANNEL_ERROR - expected 'connection.open'").with_culprit(
                method.CLASS_ID, method.METHOD_ID
            )

    def _next(self, name: str, sender: Role) -> State | None:
        if sender not in _SENDERS.get(name, ()):
            return None
        return _TRANSITIONS.get((self.state, name))

    def _move(self, method: Method, next_state: State) -> None:
        self._seen[method.NAME] = method
        self.state = next_state

    # -- building what we send ----------------------------------------------------------------

    def _send(self, name: str, **fields: Any) -> Method:
        return self.send(self.spec.method(name)(**fields))

    def start(
        self,
        version: tuple[int, int],
        server_properties: dict[str, Any],
        mechanisms: bytes,
        locales: bytes,
    ) -> Method:
        return self._send(
            "connection.start",
            version_major=version[0],
            version_minor=version[1],
            server_properties=server_properties,
            mechanisms=mechanisms,
            locales=locales,
        )

    def start_ok(
        self, client_properties: dict[str, Any], mechanism: str, response: bytes, locale: str
    ) -> Method:
        return self._send(
            "connection.start-ok",
            client_properties=client_properties,
            mechanism=mechanism,
            response=response,
            locale=locale,
        )

    def secure(self, challenge: bytes) -> Method:
        return self._send("connection.secure", challenge=challenge)

    def secure_ok(self, response: bytes) -> Method:
        return self._send("connection.secure-ok", response=response)

    def tune(self, channel_max: int, frame_max: int, heartbeat: int) -> Method:
        """Server: the limits offered (0: none)."""
        return self._send(
            "connection.tune", channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat
        )

    def tune_ok(self, channel_max: int, frame_max: int, heartbeat: int | None) -> Method:
        """Client: our limits against the server's tune (``heartbeat`` None: the server's).
        The lower limit of the two wins, 0 meaning none; when neither limits channel-max, the
        tune-ok names 65535, the highest channel number (RabbitMQ 4 refuses 0 there)."""
        offer: Any = self._seen["connection.tune"]
        self.tuning = Tuning(
            negotiate(channel_max, offer.channel_max) or 65535,
            negotiate(frame_max, offer.frame_max),
            negotiate_heartbeat(heartbeat, offer.heartbeat),
        )
        return self._send(
            "connection.tune-ok",
            channel_max=self.tuning.channel_max,
            frame_max=self.tuning.frame_max,
            heartbeat=self.tuning.heartbeat,
        )

    def accept_tuning(self, tune_ok: Any) -> Tuning:
        """Server: what a received tune-ok agrees to: 0 ("no limit") takes the offer's limit.
        Over the offer, or a frame-max under frame-min-size, is 530 not-allowed (rules
        connection.tune-ok.channel-max:upper-limit, frame-max:upper-limit and :minimum, which
        close the socket without a connection.close: the application's to do)."""
        offer: Any = self._seen["connection.tune"]
        channel_max = tune_ok.channel_max or offer.channel_max
        frame_max = tune_ok.frame_max or offer.frame_max
        if channel_max > offer.channel_max:
            raise errors.NotAllowed(
                f"NOT_ALLOWED - negotiated channel_max = {channel_max} is higher than the maximum "
                f"allowed value ({offer.channel_max})"
            )
        if frame_max > offer.frame_max or frame_max < FRAME_MIN_SIZE:
            raise errors.NotAllowed(
                f"NOT_ALLOWED - frame_max={frame_max} outside {FRAME_MIN_SIZE}..{offer.frame_max}"
            )
        self.tuning = Tuning(channel_max, frame_max, tune_ok.heartbeat)
        return self.tuning

    def open(self, virtual_host: str, *, insist: bool = False) -> Method:
        """Client: open ``virtual_host``; ``insist`` (not in 0-9-1): refuse a redirect."""
        if self.has_redirect:
            return self._send("connection.open", virtual_host=virtual_host, insist=insist)
        return self._send("connection.open", virtual_host=virtual_host)

    def open_ok(self) -> Method:
        return self._send("connection.open-ok")

    def redirect(self, host: str, known_hosts: str) -> Method:
        """Server (not in 0-9-1): send the client to ``host``; the connection ends."""
        if not self.has_redirect:
            raise ValueError(f"AMQP {self.spec.label} has no connection.redirect")
        return self._send("connection.redirect", host=host, known_hosts=known_hosts)

    def close(
        self, reply_code: int, reply_text: str, class_id: int = 0, method_id: int = 0
    ) -> Method:
        return self._send(
            "connection.close",
            reply_code=reply_code,
            reply_text=reply_text,
            class_id=class_id,
            method_id=method_id,
        )

    def close_ok(self) -> Method:
        return self._send("connection.close-ok")
