"""Rules connection.close-ok:reporting and channel.close-ok:reporting: the broker logs a
socket that closed while it waited for the peer's close-ok, and only then."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from .peer import Peer

rule = pytest.mark.spec_rule
LOGGER = "broker.connection"


def _dropped_after(peer: Peer, close: str, channel: int) -> None:
    """Wait for the server's ``close`` on ``channel``, then drop the socket unanswered."""
    peer.expect(channel, close)
    peer.sock.close()
    peer.closed = True


def _logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    """Whether the broker logged ``text``; waits (bounded) for its thread to see the close."""
    for _ in range(50):
        if any(text in r.getMessage() for r in caplog.records if r.name == LOGGER):
            return True
        time.sleep(0.05)
    return False


@rule("connection.close-ok:reporting")
def test_a_socket_closed_instead_of_connection_close_ok_is_logged(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    peer.send(0, "channel.open")  # channel.open on channel 0: a connection error
    _dropped_after(peer, "connection.close", 0)
    assert _logged(caplog, "socket closed before connection.close-ok")


@rule("channel.close-ok:reporting")
def test_a_socket_closed_instead_of_channel_close_ok_is_logged(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    peer.send(1, "queue.declare", queue="no-such-queue", passive=True)  # 404: a channel error
    _dropped_after(peer, "channel.close", 1)
    assert _logged(caplog, "socket closed before channel.close-ok on channel 1")


@rule("connection.close-ok:reporting", "channel.close-ok:reporting")
def test_a_socket_closed_after_the_close_handshake_is_not_reported(
    peer_factory: Callable[..., Peer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    peer = peer_factory()
    peer.open_channel(1)
    peer.send(1, "queue.declare", queue="no-such-queue", passive=True)
    assert peer.channel_error(1) == 404
    peer.close()
    witness = peer_factory()  # a later connection's close: the first one's was handled
    witness.close()
    assert not _logged(caplog, "socket closed before")
