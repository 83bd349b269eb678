"""channel.ok from a client: "[WORK IN PROGRESS] Signals normal completion of a method", the
answer to channel.resume, ping and pong. The server sends none of those, so a client's
channel.ok completes nothing: the server accepts it without a reply and the channel goes on."""

from __future__ import annotations

from typing import Any

from .flows import declare_queue
from .peer import Peer


def _methods(peer: Peer) -> list[str]:
    """The names of the methods received and not yet consumed by an ``expect``."""
    return [ev.method.NAME for ev in peer.pending if getattr(ev, "method", None) is not None]


def test_a_clients_channel_ok_is_accepted_without_a_reply(peer: Peer, name: str) -> None:
    peer.send(1, "channel.ok")
    # The server handles a channel's methods in order: whatever it answered to channel.ok
    # arrives before the ping's channel.ok.
    assert peer.call(1, "channel.ping").NAME == "channel.ok"
    assert _methods(peer) == []
    assert declare_queue(peer, 1, name) == name  # the channel is still open


def test_channel_ok_on_channel_zero_is_a_504_connection_error(peer_factory: Any) -> None:
    peer = peer_factory()
    peer.send(0, "channel.ok")
    assert peer.connection_error() == 504


def test_channel_ok_on_a_channel_not_open_is_a_504_connection_error(peer_factory: Any) -> None:
    peer = peer_factory()
    peer.send(3, "channel.ok")
    assert peer.connection_error() == 504
