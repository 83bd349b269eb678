"""Fixtures of the 0-9 tests: a peer speaking AMQP 0-9 to the bundled broker, a fresh
channel on it, and unique names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from .peer import Peer


@pytest.fixture
def peer_factory(bundled_broker_url: str) -> Iterator[Callable[..., Peer]]:
    peers: list[Peer] = []

    def make(**kwargs: object) -> Peer:
        peer = Peer(bundled_broker_url, **kwargs)  # type: ignore[arg-type]
        peers.append(peer)
        return peer

    yield make
    for peer in peers:
        peer.close()


@pytest.fixture
def peer(peer_factory: Callable[..., Peer]) -> Peer:
    p = peer_factory()
    p.open_channel(1)
    return p


@pytest.fixture
def name() -> str:
    return f"t09-{uuid.uuid4().hex[:12]}"
