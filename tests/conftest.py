"""Shared fixtures; their logic lives in tests/support/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support import fixtures
from tests.support.spark import local_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Tests claim the AMQP 0-9 rules they check with @pytest.mark.spec_rule (docs/conformance.md).
pytest_plugins = ("tests.conformance.plugin",)

# Fixture names of the brokers behind each `broker_url` parameter.
_BROKERS = {"bundled": "bundled_broker_url", "rabbitmq": "rabbitmq_url"}


@pytest.fixture(scope="session")
def rabbitmq_url() -> Iterator[str]:
    """``amqp://`` URL of a real RabbitMQ (a private node started once per session)."""
    yield from fixtures.rabbitmq_url()


@pytest.fixture(scope="session")
def bundled_broker_url() -> Iterator[str]:
    """``amqp://`` URL of the bundled broker, started once per session."""
    yield from fixtures.bundled_broker_url()


@pytest.fixture(
    params=[
        pytest.param("bundled"),
        pytest.param("rabbitmq", marks=pytest.mark.rabbitmq),
    ]
)
def broker_url(request: pytest.FixtureRequest) -> str:
    """The test runs once against each broker: ``test_x[bundled]``, ``test_x[rabbitmq]``."""
    url: str = request.getfixturevalue(_BROKERS[request.param])
    return url


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """One local[2] SparkSession for the whole run."""
    session = local_session(tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()
