"""Fixtures: a broker's AMQP URL and stream URI together, for the bundled broker (stream
protocol on an ephemeral port) and RabbitMQ 4 (``rabbitmq_stream``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from broker import Broker


@dataclass(frozen=True)
class Endpoints:
    amqp: str
    stream: str


@pytest.fixture(scope="session")
def bundled_endpoints() -> Iterator[Endpoints]:
    with Broker() as b:
        yield Endpoints(b.url, b.stream_url)


@pytest.fixture(params=["bundled", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def endpoints(request: pytest.FixtureRequest) -> Endpoints:
    """Each test runs against both: ``test_x[bundled]``, ``test_x[rabbitmq]``."""
    if request.param == "bundled":
        found: Endpoints = request.getfixturevalue("bundled_endpoints")
        return found
    return Endpoints(
        request.getfixturevalue("rabbitmq_url"), request.getfixturevalue("rabbitmq_stream_url")
    )
