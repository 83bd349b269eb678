"""The broker negotiates the transitional 0-10 draft on its protocol header, as one more
dialect, and completes the handshake with the protocol layer's client."""

from __future__ import annotations

from collections.abc import Callable

from amqp_protocol import SPEC_0_10
from tests.spec09.peer import Peer


def test_header_amqp_1_1_0_10_is_answered_by_connection_start_version_0_10(
    peer_factory: Callable[..., Peer],
) -> None:
    peer = peer_factory(handshake=False)
    assert (peer.start.version_major, peer.start.version_minor) == (0, 10)
    assert peer.proto.spec is SPEC_0_10
    assert b"PLAIN" in peer.start.mechanisms.split()


def test_handshake_reaches_open_ok_and_a_channel_opens(peer_factory: Callable[..., Peer]) -> None:
    peer = peer_factory()
    assert peer.call(1, "channel.open").NAME == "channel.open-ok"
    assert peer.call(1, "channel.close", reply_code=200, reply_text="ok").NAME == (
        "channel.close-ok"
    )
