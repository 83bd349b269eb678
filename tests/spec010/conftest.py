"""Fixtures of the 0-10 draft tests: a peer speaking the transitional 0-10 draft to the
bundled broker (the 0-9 tests' ``Peer`` on ``SPEC_0_10``), a fresh channel on it, a pika
(0-9-1) channel to the same broker, and unique names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from amqp_protocol import SPEC_0_10
from tests.spec09.peer import Peer


@pytest.fixture
def peer_factory(bundled_broker_url: str) -> Iterator[Callable[..., Peer]]:
    peers: list[Peer] = []

    def make(**kwargs: object) -> Peer:
        peer = Peer(bundled_broker_url, SPEC_0_10, **kwargs)  # type: ignore[arg-type]
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
    return f"t010-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def pika_channel(bundled_broker_url: str) -> Iterator[BlockingChannel]:
    conn = pika.BlockingConnection(pika.URLParameters(bundled_broker_url))
    yield conn.channel()
    conn.close()
