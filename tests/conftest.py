"""Shared fixtures; their logic lives in tests/support/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from testbed.rabbitmq import stream_uri_of
from testbed.spark import local_session
from tests.support import fixtures

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Tests claim the AMQP 0-9 rules they check with @pytest.mark.spec_rule (docs/conformance.md).
# A test that uses the `spark` fixture must carry the spark mark (tests/support/spark_mark.py).
pytest_plugins = ("tests.conformance.plugin", "tests.support.spark_mark", "pytester")


@pytest.fixture(scope="session")
def rabbitmq_url() -> Iterator[str]:
    """``amqp://`` URL of a real RabbitMQ 4 (a private node started once per session)."""
    yield from fixtures.rabbitmq_url(4)


@pytest.fixture(scope="session")
def rabbitmq_stream_url(rabbitmq_url: str) -> str:
    """``rabbitmq-stream://`` URI of the same RabbitMQ 4: its ``rabbitmq_stream`` listener."""
    return stream_uri_of(rabbitmq_url)


@pytest.fixture(scope="session")
def rabbitmq3_url() -> Iterator[str]:
    """``amqp://`` URL of a real RabbitMQ 3.10 (a private node started once per session),
    for the connector's tests: many users still run 3.x."""
    yield from fixtures.rabbitmq_url(3)


@pytest.fixture(scope="session")
def bundled_broker_url() -> Iterator[str]:
    """``amqp://`` URL of the bundled broker, started once per session."""
    yield from fixtures.bundled_broker_url()


@pytest.fixture(params=fixtures.broker_params("bundled", "rabbitmq"))
def broker_url(request: pytest.FixtureRequest) -> str:
    """The test runs once against each broker: ``test_x[bundled]``, ``test_x[rabbitmq]``."""
    return fixtures.broker_url_of(request)


@pytest.fixture(params=fixtures.broker_params("bundled", "rabbitmq"))
def stream_urls(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(AMQP URL, stream-protocol URI) of one broker serving both."""
    if request.param == "bundled":
        from broker import Broker

        with Broker() as b:
            yield b.url, b.stream_url
    else:
        url = fixtures.broker_url_of(request)
        yield url, stream_uri_of(url)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """One local[2] SparkSession for the whole run."""
    session = local_session(tmp_path_factory.mktemp("spark"))
    yield session
    session.stop()
