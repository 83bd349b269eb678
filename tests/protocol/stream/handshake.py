"""A client and a server StreamConnection taken through the handshake in-process."""

from __future__ import annotations

from amqp_protocol.generated import stream as c
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.connection import Role, State, StreamConnection


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def deliver(sender: StreamConnection, receiver: StreamConnection, command: Command) -> Command:
    """Send ``command`` from ``sender``; what ``receiver`` reads of it."""
    (received,) = receiver.receive_data(sender.send(command))
    return received


def open_pair(
    clock: FakeClock, *, server_tune: tuple[int, int] = (1_048_576, 60)
) -> tuple[StreamConnection, StreamConnection]:
    """A client and a server connection, open, tuned to ``server_tune``."""
    client = StreamConnection(Role.CLIENT, clock=clock)
    server = StreamConnection(Role.SERVER, clock=clock)
    ok = ResponseCode.OK
    deliver(client, server, c.PeerProperties(1, {"product": "test"}))
    deliver(server, client, c.PeerPropertiesResponse(1, ok, {"version": "4"}))
    deliver(client, server, c.SaslHandshake(2))
    deliver(server, client, c.SaslHandshakeResponse(2, ok, ["PLAIN"]))
    deliver(client, server, c.SaslAuthenticate(3, "PLAIN", b"\0guest\0guest"))
    deliver(server, client, c.SaslAuthenticateResponse(3, ok))
    deliver(server, client, c.Tune(*server_tune))
    deliver(client, server, c.Tune(*server_tune))
    deliver(client, server, c.Open(4, "/"))
    deliver(server, client, c.OpenResponse(4, ok))
    assert client.state is server.state is State.OPEN
    return client, server
