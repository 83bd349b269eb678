"""Super streams in the tests: brokers that have them (with their management API), the
layout as RabbitMQ 4 makes it, and ``rabbitmq-streams`` on a private node.

A broker for super-stream tests is named (``SUPER_STREAM_BROKERS``) and opened by
:func:`super_stream_broker`; a three-node cluster joins by adding its name and a branch
there that yields a :class:`SuperStreamBroker` of the cluster (every node's URL in
``url``'s ``addresses``, any node's management API).
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest

from amqp_spark.client import Channel, connect
from testbed.rabbitmq import RabbitMQNode
from tests.support.fixtures import private_rabbitmq_node

#: The plugins a RabbitMQ node needs for super streams and their discovery by HTTP.
PLUGINS = ("rabbitmq_management", "rabbitmq_stream")

#: ``broker_url``-style parameters of the super-stream tests.
SUPER_STREAM_BROKERS = ["bundled", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]


@dataclass
class SuperStreamBroker:
    """A broker under test: its AMQP URL, its management API's base URL, and (RabbitMQ)
    the node, whose own ``rabbitmq-streams`` can make super streams."""

    name: str
    url: str
    management_url: str
    node: RabbitMQNode | None = None

    def get(self, path: str) -> Any:
        token = base64.b64encode(b"guest:guest").decode()
        request = urllib.request.Request(
            self.management_url.rstrip("/") + path, headers={"Authorization": f"Basic {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def layout(self, name: str) -> dict[str, Any]:
        """The exchange, partition queues and bindings of super stream ``name`` as the
        management API lists them, in a form both brokers can be compared in."""
        vhost = quote("/", safe="")
        exchange = self.get(f"/api/exchanges/{vhost}/{name}")
        bindings = self.get(f"/api/exchanges/{vhost}/{name}/bindings/source")
        queues = {
            b["destination"]: self.get(f"/api/queues/{vhost}/{b['destination']}") for b in bindings
        }
        return {
            "exchange": {
                k: exchange[k] for k in ("type", "durable", "auto_delete", "internal", "arguments")
            },
            "bindings": sorted(
                (b["destination"], b["destination_type"], b["routing_key"], b["arguments"])
                for b in bindings
            ),
            "queues": {
                q: {"durable": info["durable"], "arguments": info["arguments"]}
                for q, info in queues.items()
            },
        }

    def delete(self, name: str) -> None:
        """Remove super stream ``name`` over AMQP (its partitions by their bindings)."""
        conn = connect(self.url)
        try:
            ch = conn.channel()
            for stream in self.layout(name)["queues"]:
                ch.queue_delete(stream)
            ch.exchange_delete(name)
        finally:
            conn.close()


def declare_over_amqp(ch: Channel, name: str, keys: list[str]) -> list[str]:
    """Super stream ``name`` declared over AMQP 0-9-1 exactly as ``rabbitmq-streams
    add_super_stream`` makes it (``keys``: its binding keys in partition order); the
    partition streams in order."""
    ch.exchange_declare(name, "direct", durable=True, arguments={"x-super-stream": True})
    streams = []
    for order, key in enumerate(keys):
        stream = f"{name}-{key}"
        ch.queue_declare(
            stream,
            durable=True,
            arguments={"x-queue-type": "stream", "x-queue-leader-locator": "balanced"},
        )
        ch.queue_bind(stream, name, key, arguments={"x-stream-partition-order": order})
        streams.append(stream)
    return streams


def rabbitmq_streams(node: RabbitMQNode, *args: str) -> subprocess.CompletedProcess[str]:
    """``rabbitmq-streams args...`` against ``node``: its plugin commands are found only
    with the plugins directory in the environment (measured in the trixie root)."""
    env = node.environment()
    env["RABBITMQ_PLUGINS_DIR"] = (
        f"/usr/lib/rabbitmq/lib/rabbitmq_server-{node.install.version}/plugins"
    )
    return subprocess.run(
        node.install.command("rabbitmq-streams", "-n", node.nodename, *args),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextlib.contextmanager
def super_stream_broker(name: str) -> Iterator[SuperStreamBroker]:
    """The broker ``name`` (of ``SUPER_STREAM_BROKERS``) for a module's tests."""
    if name == "bundled":
        from broker import Broker

        with Broker() as b:
            yield SuperStreamBroker(name, b.url, b.management_url)
        return
    with private_rabbitmq_node("with super streams", plugins=PLUGINS) as node:
        yield SuperStreamBroker(
            name, node.url, node.management_url.removesuffix("/api/"), node=node
        )
