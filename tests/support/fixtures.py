"""What the fixtures in tests/conftest.py do, kept out of conftest so it stays a list."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.rabbitmq import RabbitMQUnavailable, rabbitmq


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def rabbitmq_url() -> Iterator[str]:
    """A RabbitMQ for the session. When none can be had, the tests that need one fail in
    CI (a skipped broker test there would hide a broken setup) and skip elsewhere, each
    with the reason."""
    try:
        with rabbitmq() as url:
            yield url
        return
    except RabbitMQUnavailable as e:
        reason = f"RabbitMQ unavailable: {e}"
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def bundled_broker_url() -> Iterator[str]:
    """The bundled broker, in process, on an ephemeral port of 127.0.0.1."""
    from broker import Broker

    with Broker() as b:
        yield b.url
