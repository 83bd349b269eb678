"""Fixtures of the 0-9 tests: a peer speaking AMQP 0-9 to the bundled broker, a fresh
channel on it, and unique names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from amqp_protocol import SPEC_0_9, Spec
from broker import Broker

from .peer import Peer


@pytest.fixture
def spec(request: pytest.FixtureRequest) -> Spec:
    """The version the peers speak: 0-9, unless the test runs in both dialects
    (``dialects.in_both_dialects``)."""
    return getattr(request, "param", SPEC_0_9)


@pytest.fixture
def peer_factory(bundled_broker_url: str, spec: Spec) -> Iterator[Callable[..., Peer]]:
    peers: list[Peer] = []

    def make(**kwargs: object) -> Peer:
        kwargs.setdefault("spec", spec)
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


@pytest.fixture
def broker_with() -> Iterator[Callable[..., Broker]]:
    """Start a bundled broker with the given config keys (stopped after the test)."""
    started: list[Broker] = []

    def start(**config: object) -> Broker:
        broker = Broker(config={"auth_failure_delay": 0.1, **config}).start()
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture
def restarted(broker_with: Callable[..., Broker], tmp_path: Path) -> Callable[[], Broker]:
    """Each call stops the broker the previous call started and starts a new one on the same
    data directory (the first call just starts one)."""
    brokers: list[Broker] = []

    def restart() -> Broker:
        if brokers:
            brokers[-1].stop()
        brokers.append(broker_with(data_dir=str(tmp_path)))
        return brokers[-1]

    return restart
