"""RabbitMQ 4.0 stamps ``x-queue-type: classic`` into the arguments of every queue declared
without a type, however it was declared (AMQP, HTTP PUT, a definitions import), and its API
and definitions export show it; RabbitMQ 3.10 showed the arguments as given. Measured on
4.0.5 (and 3.10.8 for the contrast) with pika and the HTTP API; the queue.declare-ok is the
same on both, and redeclaring with or without the argument is equivalent on both. The same
checks run against the bundled broker and a private RabbitMQ 4 node with the management
plugin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pika
import pytest

from broker import Broker
from tests.management.conftest import Api
from tests.support.fixtures import private_rabbitmq_node

CLASSIC = {"x-queue-type": "classic"}


@pytest.fixture(
    scope="module", params=["bundled", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]
)
def node(request: pytest.FixtureRequest) -> Iterator[tuple[Api, str]]:
    """(API client, AMQP URL) of the bundled broker or a RabbitMQ 4 node with management."""
    if request.param == "bundled":
        with Broker() as b:
            yield Api(b.management_url), b.url
        return
    with private_rabbitmq_node(
        "with rabbitmq_management", plugins=("rabbitmq_management",)
    ) as rabbitmq:
        yield Api(rabbitmq.management_url.removesuffix("/api/")), rabbitmq.url


@pytest.fixture
def declared(node: tuple[Api, str]) -> Iterator[tuple[Api, Any, list[str]]]:
    """The API, a pika channel, and a list the test appends the queues it makes to (deleted
    afterwards: the node is the module's)."""
    api, url = node
    connection = pika.BlockingConnection(pika.URLParameters(url))
    names: list[str] = []
    try:
        yield api, connection.channel(), names
    finally:
        connection.close()
        for name in names:
            api.call("DELETE", f"/api/queues/%2F/{name}")


def _arguments(api: Api, name: str) -> Any:
    return api.get(f"/api/queues/%2F/{name}")["arguments"]


def test_a_queue_declared_over_amqp_without_a_type_shows_x_queue_type_classic(
    declared: tuple[Api, Any, list[str]],
) -> None:
    api, channel, names = declared
    names += ["plain", "durable", "with-args", "auto-delete"]
    channel.queue_declare("plain")
    channel.queue_declare("durable", durable=True)
    channel.queue_declare("with-args", arguments={"x-max-length": 5})
    channel.queue_declare("auto-delete", auto_delete=True)
    channel.queue_declare("exclusive", exclusive=True)
    server_named = channel.queue_declare("", exclusive=True).method.queue
    for name in ("plain", "durable", "auto-delete", "exclusive", server_named):
        assert _arguments(api, name) == CLASSIC, name
    assert _arguments(api, "with-args") == {"x-max-length": 5, **CLASSIC}
    listed = {q["name"]: q["arguments"] for q in api.get("/api/queues/%2F")}
    assert listed["plain"] == CLASSIC and listed[server_named] == CLASSIC


def test_quorum_and_stream_queues_keep_their_own_type(
    declared: tuple[Api, Any, list[str]],
) -> None:
    api, channel, names = declared
    names += ["qq", "st"]
    for name, kind in (("qq", "quorum"), ("st", "stream")):
        channel.queue_declare(name, durable=True, arguments={"x-queue-type": kind})
        assert _arguments(api, name) == {"x-queue-type": kind}


def test_queues_put_or_imported_without_a_type_are_stamped_and_exported_so(
    declared: tuple[Api, Any, list[str]],
) -> None:
    api, _, names = declared
    names += ["put-empty", "put-transient", "imported", "imported-args"]
    api.ok("PUT", "/api/queues/%2F/put-empty", {})
    api.ok("PUT", "/api/queues/%2F/put-transient", {"durable": False})
    queue = {"vhost": "/", "durable": True, "auto_delete": False}
    api.ok(
        "POST",
        "/api/definitions",
        {
            "queues": [
                {"name": "imported", **queue, "arguments": {}},
                {"name": "imported-args", **queue, "arguments": {"x-max-length": 3}},
            ]
        },
    )
    exported = {q["name"]: q["arguments"] for q in api.get("/api/definitions")["queues"]}
    for name in ("put-empty", "put-transient", "imported"):
        assert exported[name] == CLASSIC, name
    assert exported["imported-args"] == {"x-max-length": 3, **CLASSIC}
    per_vhost = {q["name"]: q["arguments"] for q in api.get("/api/definitions/%2F")["queues"]}
    assert per_vhost["put-empty"] == CLASSIC


def test_redeclaring_with_or_without_the_stamped_type_is_equivalent(
    declared: tuple[Api, Any, list[str]],
) -> None:
    api, channel, names = declared
    names += ["plain", "put"]
    channel.queue_declare("plain")
    assert channel.queue_declare("plain", arguments=CLASSIC).method.queue == "plain"
    assert channel.queue_declare("plain").method.queue == "plain"
    assert channel.queue_declare("plain", passive=True).method.queue == "plain"
    api.ok("PUT", "/api/queues/%2F/put", {})
    assert api.call("PUT", "/api/queues/%2F/put", {"arguments": CLASSIC})[0] == 204
    assert channel.queue_declare("put").method.queue == "put"
    status, body = api.call("PUT", "/api/queues/%2F/put", {"arguments": {"x-queue-type": "quorum"}})
    assert (status, body["reason"]) == (
        400,
        "inequivalent arg 'x-queue-type' for queue 'put' in vhost '/': "
        "received 'quorum' but current is 'classic'",
    )


def test_a_put_without_durable_declares_a_transient_queue_or_direct_exchange(
    declared: tuple[Api, Any, list[str]],
) -> None:
    """Measured on 4.0.5 and 3.10.8: ``durable`` defaults to false for a PUT of a queue and
    of an exchange, and an exchange PUT without ``type`` is a direct exchange."""
    api, _, names = declared
    names.append("put-default")
    api.ok("PUT", "/api/queues/%2F/put-default", {})
    assert api.get("/api/queues/%2F/put-default")["durable"] is False
    api.ok("PUT", "/api/exchanges/%2F/put-default", {})
    try:
        exchange = api.get("/api/exchanges/%2F/put-default")
        assert (exchange["type"], exchange["durable"]) == ("direct", False)
    finally:
        api.call("DELETE", "/api/exchanges/%2F/put-default")
