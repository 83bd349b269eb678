"""pytest plugin loaded into a peer suite's own run (``-p peer_plugin``) by
tests/peer/suites.py for aio-pika, whose conftest has no connection setting and insists on
Docker (its ``pytest_configure`` refuses to start without a Docker socket, its
``rabbitmq_container`` fixture runs a container; aiormq's conftest reads ``AMQP_URL`` and
needs no plugin). It points the suite at the broker under test without editing a file of
the suite: it replaces those two names in the loaded conftest module
before pytest reads its fixtures (pytest_configure runs before the session's fixture
manager parses conftest fixtures): the Docker check becomes a no-op and
``rabbitmq_container`` names the broker given by ``AMQP_URL`` (AMQP) and
``PEER_AMQPS_PORT`` (its TLS listener, when there is one).

Runs in the peer venv (pytest only), never imported by the project's own tests.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from urllib.parse import urlsplit

import pytest

_SUITE_CONFTEST = "tests.conftest"


def _broker_container(conftest: ModuleType) -> object:
    url = urlsplit(os.environ["AMQP_URL"])
    ports = {"5672/tcp": url.port or 5672, "5671/tcp": int(os.environ.get("PEER_AMQPS_PORT", 5671))}

    @pytest.fixture(scope="session", name="rabbitmq_container")
    def rabbitmq_container() -> object:
        return conftest.ContainerInfo(id="peer-suites", ports=ports, host=url.hostname)

    return rabbitmq_container


def _no_docker_check() -> None:
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    conftest = sys.modules.get(_SUITE_CONFTEST)
    if conftest is None:
        raise pytest.UsageError(f"peer_plugin: the suite's {_SUITE_CONFTEST} was not loaded")
    vars(conftest).update(  # the suite's own fixtures, replaced
        check_docker_available=_no_docker_check, rabbitmq_container=_broker_container(conftest)
    )
