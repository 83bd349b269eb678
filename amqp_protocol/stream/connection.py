"""A sans-IO stream-protocol connection, for a client or a server: bytes in, commands out;
commands in, bytes out; the handshake's state; heartbeats by a clock the caller gives.

The connection does no I/O. ``receive_data(data)`` splits the bytes read on the frames'
u32 size prefixes (buffering a partial frame) and returns the decoded commands; ``send``
returns a command's frame bytes. Both move the handshake along :data:`HANDSHAKE`::

    client                              server
    PeerProperties               ->
                                 <-     PeerPropertiesResponse
    SaslHandshake                ->
                                 <-     SaslHandshakeResponse
    SaslAuthenticate             ->
                                 <-     SaslAuthenticateResponse (SASL_CHALLENGE: again)
                                 <-     Tune
    Tune (or TuneResponse)       ->
    Open                         ->
                                 <-     OpenResponse

A ``Deliver``'s chunk (and a ``Publish``'s records) are ``memoryview`` slices of the bytes
given to ``receive_data`` when the frame arrived in one piece, of one buffer per frame
otherwise: nothing copies them. So pass ``bytes`` (what ``socket.recv`` returns) or a
buffer that is not reused while the commands are in use.

Bad input raises a :class:`~amqp_protocol.stream.errors.StreamProtocolError` whose
``code`` is the response code to close with (:meth:`StreamConnection.close_for`); the
connection is then unusable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum

from amqp_protocol.generated.stream import (
    Close,
    CloseResponse,
    Heartbeat,
    Open,
    OpenResponse,
    PeerProperties,
    PeerPropertiesResponse,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    Tune,
    TuneResponse,
)
from amqp_protocol.generated.stream_codes import ResponseCode

from .command import Command
from .errors import FrameTooLarge, StreamProtocolError, UnexpectedCommand
from .frames import decode_frame
from .values import U32, Buffer

__all__ = [
    "DEFAULT_FRAME_MAX",
    "DEFAULT_HEARTBEAT",
    "HANDSHAKE",
    "Role",
    "State",
    "StreamConnection",
    "negotiate",
]

#: RabbitMQ's defaults (``rabbit_stream.hrl``): 1 MiB frames, a heartbeat every 60 s.
DEFAULT_FRAME_MAX = 1_048_576
DEFAULT_HEARTBEAT = 60


class Role(Enum):
    CLIENT = "client"
    SERVER = "server"


class State(Enum):
    """Where a connection is in its life."""

    START = "start"
    PEER_PROPERTIES = "peer-properties sent"
    PEERED = "peer properties exchanged"
    SASL_HANDSHAKE = "sasl-handshake sent"
    SASL_MECHANISMS = "sasl mechanisms known"
    AUTHENTICATING = "sasl-authenticate sent"
    AUTHENTICATED = "authenticated"
    TUNING = "tune sent"
    TUNED = "tuned"
    OPENING = "open sent"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


#: The handshake: (state, command) -> the next state. A response that is not OK ends it
#: (CLOSED), but for SaslAuthenticateResponse's SASL_CHALLENGE, which asks for another
#: SaslAuthenticate. Heartbeat and Close are allowed in any state but CLOSED.
HANDSHAKE: dict[tuple[State, type[Command]], State] = {
    (State.START, PeerProperties): State.PEER_PROPERTIES,
    (State.PEER_PROPERTIES, PeerPropertiesResponse): State.PEERED,
    (State.PEERED, SaslHandshake): State.SASL_HANDSHAKE,
    (State.SASL_HANDSHAKE, SaslHandshakeResponse): State.SASL_MECHANISMS,
    (State.SASL_MECHANISMS, SaslAuthenticate): State.AUTHENTICATING,
    (State.AUTHENTICATING, SaslAuthenticateResponse): State.AUTHENTICATED,
    (State.AUTHENTICATED, Tune): State.TUNING,
    (State.TUNING, Tune): State.TUNED,
    (State.TUNING, TuneResponse): State.TUNED,
    (State.TUNED, Open): State.OPENING,
    (State.OPENING, OpenResponse): State.OPEN,
}
#: The commands of the handshake: not allowed once the connection is open.
_HANDSHAKE_COMMANDS = frozenset(command for _, command in HANDSHAKE)
_ANY_TIME = (Heartbeat, Close)


def negotiate(proposed: int, wanted: int) -> int:
    """A tuned value: the smaller of two, where 0 means no limit."""
    if proposed == 0 or wanted == 0:
        return proposed or wanted
    return min(proposed, wanted)


class StreamConnection:
    """One side of a stream-protocol connection.

    ``frame_max`` bounds the frames received until the handshake tunes it (0: no bound);
    ``clock`` (monotonic seconds) times the heartbeats.
    """

    def __init__(
        self,
        role: Role,
        *,
        frame_max: int = DEFAULT_FRAME_MAX,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.role = role
        self.state = State.START
        self.frame_max = frame_max
        #: Seconds; 0 until tuned (and when tuned to none).
        self.heartbeat = 0
        self._clock = clock
        self._last_received = self._last_sent = clock()
        self._next_correlation_id = 1
        #: The prefix of a frame whose size is not known yet (fewer than 4 bytes).
        self._head = b""
        #: The frame being assembled across reads, and how much of it is filled.
        self._frame: bytearray | None = None
        self._filled = 0

    # Bytes in

    def receive_data(self, data: Buffer) -> list[Command]:
        """The commands completed by ``data`` (possibly none), in order."""
        if self.state is State.CLOSED:
            raise UnexpectedCommand("the connection is closed: no data may arrive on it")
        if not data:
            return []
        self._last_received = self._clock()
        try:
            return self._split(data if isinstance(data, memoryview) else memoryview(data))
        except StreamProtocolError:
            self.state = State.CLOSED
            raise

    def _split(self, view: memoryview) -> list[Command]:
        commands: list[Command] = []
        pos = self._continue_frame(view, commands)
        end = len(view)
        while pos < end:
            if end - pos < 4:
                self._head = bytes(view[pos:])
                break
            (size,) = U32.unpack_from(view, pos)
            self._check_size(size)
            start = pos + 4
            if start + size <= end:
                commands.append(self._received(view[start : start + size]))
                pos = start + size
            else:
                self._frame = bytearray(size)
                self._filled = end - start
                self._frame[: self._filled] = view[start:]
                break
        return commands

    def _continue_frame(self, view: memoryview, commands: list[Command]) -> int:
        """Feed ``view`` to the frame begun by an earlier read; where the rest begins."""
        pos = 0
        if self._head:
            pos = 4 - len(self._head)
            head = self._head + bytes(view[:pos])
            if len(head) < 4:
                self._head = head
                return len(view)
            self._head = b""
            (size,) = U32.unpack_from(head)
            self._check_size(size)
            self._frame = bytearray(size)
            self._filled = 0
        frame = self._frame
        if frame is None:
            return pos
        take = min(len(frame) - self._filled, len(view) - pos)
        frame[self._filled : self._filled + take] = view[pos : pos + take]
        self._filled += take
        if self._filled == len(frame):
            self._frame = None
            commands.append(self._received(memoryview(frame)))
        return pos + take

    def _check_size(self, size: int) -> None:
        if self.frame_max and size > self.frame_max:
            raise FrameTooLarge(
                f"a frame of {size} bytes is over the maximum frame size of {self.frame_max}"
            )

    def _received(self, body: memoryview) -> Command:
        command = decode_frame(body)
        if command.FROM not in (self._peer, "both"):
            raise UnexpectedCommand(
                f"{command.NAME} is sent by the {command.FROM}: a {self._peer} sent it"
            )
        self._advance(command)
        return command

    @property
    def _peer(self) -> str:
        return "server" if self.role is Role.CLIENT else "client"

    # Commands out

    def send(self, command: Command) -> bytes:
        """The frame of ``command``, which this side may send in the connection's state."""
        if self.state is State.CLOSED:
            raise UnexpectedCommand(f"the connection is closed: cannot send {command.NAME}")
        if command.FROM not in (self.role.value, "both"):
            raise UnexpectedCommand(
                f"{command.NAME} is sent by the {command.FROM}, not a {self.role.value}"
            )
        self._advance(command)
        self._last_sent = self._clock()
        return command.encode()

    def next_correlation_id(self) -> int:
        """A correlation id not used before on this connection (for a request to send)."""
        correlation_id = self._next_correlation_id
        self._next_correlation_id = correlation_id % 0xFFFFFFFF + 1
        return correlation_id

    def close_for(self, error: StreamProtocolError) -> bytes:
        """The ``Close`` a side sends for ``error`` before closing the socket."""
        close = Close(self.next_correlation_id(), error.code, str(error)[:200])
        frame = close.encode()
        self.state = State.CLOSED
        return frame

    # The handshake and the connection's life

    def _advance(self, command: Command) -> None:
        kind = type(command)
        if isinstance(command, Close):
            self.state = State.CLOSING
            return
        if isinstance(command, CloseResponse):
            self.state = State.CLOSED
            return
        if isinstance(command, _ANY_TIME):
            return
        if self.state is State.OPEN:
            if kind in _HANDSHAKE_COMMANDS:
                raise UnexpectedCommand(f"{command.NAME} after the connection is open")
            return
        if self.state is State.CLOSING:
            return  # what was in flight when the close crossed it
        after = HANDSHAKE.get((self.state, kind))
        if after is None:
            raise UnexpectedCommand(
                f"{command.NAME} is not allowed while the connection is {self.state.value}"
            )
        code = getattr(command, "response_code", ResponseCode.OK)
        if isinstance(command, SaslAuthenticateResponse) and code == ResponseCode.SASL_CHALLENGE:
            after = State.SASL_MECHANISMS
        elif code != ResponseCode.OK:
            after = State.CLOSED
        if isinstance(command, Tune | TuneResponse) and after is State.TUNED:
            self.frame_max = command.frame_max
            self.heartbeat = command.heartbeat
        self.state = after

    # Heartbeats

    def heartbeat_due(self) -> bool:
        """True when this side has sent nothing for a heartbeat interval: send a Heartbeat."""
        return bool(self.heartbeat) and self._clock() - self._last_sent >= self.heartbeat

    def peer_timed_out(self) -> bool:
        """True when nothing came from the peer for two heartbeat intervals (RabbitMQ's
        rule): the connection is dead."""
        return bool(self.heartbeat) and self._clock() - self._last_received >= 2 * self.heartbeat
