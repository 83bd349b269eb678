"""What the fixtures in tests/conftest.py do, kept out of conftest so it stays a list."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import NoReturn

import pytest

from testbed.rabbitmq import (
    RabbitMQNode,
    RabbitMQUnavailable,
    TlsFiles,
    find_rabbitmq,
    missing_rabbitmq,
    rabbitmq,
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def rabbitmq_url(major: int = 4) -> Iterator[str]:
    """A RabbitMQ ``major`` (4, the reference, or 3) for the session. When none can be had,
    the tests that need one fail in CI (a skipped broker test there would hide a broken
    setup) and skip elsewhere, each with the reason."""
    try:
        with rabbitmq(major) as url:
            yield url
        return
    except RabbitMQUnavailable as e:
        _fail_in_ci_else_skip(f"RabbitMQ {major} unavailable: {e}")


@contextlib.contextmanager
def private_rabbitmq_node(
    purpose: str, major: int = 4, plugins: Sequence[str] = (), tls: TlsFiles | None = None
) -> Iterator[RabbitMQNode]:
    """A RabbitMQ ``major`` node of the caller alone, with ``plugins`` enabled, for tests
    that restart it or raise its alarms (the session's node is shared, and an external
    server named by the environment cannot be restarted). When none can be started, the
    test fails in CI and skips elsewhere, as ``rabbitmq_url`` does; ``purpose`` ("to
    restart") goes into the reason."""
    install = find_rabbitmq(major)
    if install is None:
        _fail_in_ci_else_skip(f"no private RabbitMQ node {purpose}: {missing_rabbitmq(major)}")
    node = RabbitMQNode(install, plugins=plugins, tls=tls)
    try:
        node.start()
    except RabbitMQUnavailable as e:
        _fail_in_ci_else_skip(f"no private RabbitMQ node {purpose}: {e}")
    try:
        yield node
    finally:
        node.stop()


def _fail_in_ci_else_skip(reason: str) -> NoReturn:
    """A broker test that cannot have its RabbitMQ fails in CI (a skip there would hide a
    broken setup) and skips elsewhere, with the reason."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


# Fixture names of the brokers behind each `broker_url` parameter: "rabbitmq" is RabbitMQ 4,
# the reference; "rabbitmq3" (3.10) only where a directory's conftest asks for it.
_BROKERS = {
    "bundled": "bundled_broker_url",
    "rabbitmq": "rabbitmq_url",
    "rabbitmq3": "rabbitmq3_url",
}


def broker_params(*names: str) -> list[object]:
    """``broker_url`` parameters for the brokers ``names`` (keys of _BROKERS), the real
    RabbitMQs marked ``rabbitmq``."""
    return [
        pytest.param(name, marks=pytest.mark.rabbitmq) if name != "bundled" else name
        for name in names
    ]


def broker_url_of(request: pytest.FixtureRequest) -> str:
    """The URL of the broker a ``broker_url`` parameter names."""
    url: str = request.getfixturevalue(_BROKERS[request.param])
    return url


def bundled_broker_url() -> Iterator[str]:
    """The bundled broker, in process, on an ephemeral port of 127.0.0.1."""
    from broker import Broker

    with Broker() as b:
        yield b.url
