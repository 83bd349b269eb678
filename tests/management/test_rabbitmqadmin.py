"""Debian's ``rabbitmqadmin`` (shipped with rabbitmq-server), unchanged, against the bundled
broker and against a private RabbitMQ node with rabbitmq_management: one scenario, the same
answers. RabbitMQ's queue counts appear in its API only after its first statistics emission,
so listings that show counts are read again (bounded) until every row has them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pika
import pytest

from broker import Broker
from testbed.rabbitmq import rabbitmq4_root
from tests.support.fixtures import in_ci, private_rabbitmq_node

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

RABBITMQADMIN = Path("/usr/bin/rabbitmqadmin")
STATS_WAIT = 30.0
#: the queues' depths once the scenario has published (RabbitMQ shows 0 for a while first)
PUBLISHED = {"q1": 1, "q2": 2}


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


class Admin:
    def __init__(self, management_url: str, tmp: Path, script: Path = RABBITMQADMIN) -> None:
        parts = urlsplit(management_url)
        self.base = [
            "-H",
            str(parts.hostname),
            "-P",
            str(parts.port),
            "-u",
            "guest",
            "-p",
            "guest",
            "-f",
            "raw_json",
        ]
        self.tmp = tmp
        self.script = script

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(self.script), *self.base, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args))

    def listed(self, *args: str, settled: Callable[[list[Any]], bool] | None = None) -> Any:
        """A listing once every row has all its columns and ``settled`` holds (RabbitMQ's
        counts come late, and change late), or as it is after ``STATS_WAIT`` seconds."""
        columns = [a for a in args[2:] if "=" not in a]
        deadline = time.monotonic() + STATS_WAIT
        while True:
            rows = self.json(*args)
            complete = all(set(columns) <= set(row) for row in rows)
            if complete and (settled is None or settled(rows)) or time.monotonic() > deadline:
                return sorted(rows, key=_canonical)
            time.sleep(0.5)


def _one_channel(rows: list[Any]) -> bool:
    """RabbitMQ lists a new connection with 0 channels until its next statistics."""
    return [r["channels"] for r in rows] == [1]


def scenario(admin: Admin, amqp_url: str) -> list[tuple[str, Any]]:
    """The steps and what rabbitmqadmin printed for each (parsed), in order."""
    out: list[tuple[str, Any]] = []
    run = admin.run
    run("declare", "exchange", "name=orders", "type=topic")
    run("declare", "queue", "name=q1", "durable=false")
    run("declare", "queue", "name=q2", 'arguments={"x-max-length": 10}')
    run("declare", "binding", "source=orders", "destination=q1", "routing_key=order.*")
    run(
        "publish",
        "exchange=orders",
        "routing_key=order.new",
        "payload=hello",
        'properties={"content_type": "text/plain", "headers": {"h": 1}}',
    )
    run("publish", "routing_key=q2", "payload=direct")
    run("publish", "routing_key=q2", "payload=second")
    out.append(
        (
            "queues",
            admin.listed(
                "list",
                "queues",
                "name",
                "messages",
                "durable",
                "arguments",
                settled=lambda rows: {r["name"]: r["messages"] for r in rows} == PUBLISHED,
            ),
        )
    )
    exchanges = admin.listed("list", "exchanges", "name", "type", "durable", "internal")
    out.append(
        (
            "exchanges",
            [
                e
                for e in exchanges
                if e["name"] == "orders"
                or e["name"].startswith("amq.")
                and "amq.rabbitmq" not in e["name"]
            ],
        )
    )
    out.append(
        (
            "bindings",
            admin.listed(
                "list", "bindings", "source", "destination", "destination_type", "routing_key"
            ),
        )
    )
    out.append(("get q1", admin.json("get", "queue=q1", "ackmode=ack_requeue_false")))
    out.append(("get q2 twice", admin.json("get", "queue=q2", "count=2")))
    out.append(
        ("get q2 again", admin.json("get", "queue=q2", "count=1", "ackmode=ack_requeue_false"))
    )
    run("purge", "queue", "name=q2")
    emptied = admin.listed(
        "list",
        "queues",
        "name",
        "messages",
        settled=lambda rows: all(r.get("messages") == 0 for r in rows),
    )
    out.append(("after purge", emptied))
    export = admin.tmp / "defs.json"
    run("export", str(export))
    exported = json.loads(export.read_text())
    out.append(
        (
            "export",
            {k: sorted(exported[k], key=_canonical) for k in ("queues", "exchanges", "bindings")},
        )
    )
    run(
        "delete",
        "binding",
        "source=orders",
        "destination_type=queue",
        "destination=q1",
        "properties_key=order.*",
    )
    out.append(("after unbind", admin.listed("list", "bindings", "source", "destination")))
    run("delete", "queue", "name=q1")
    run("delete", "exchange", "name=orders")
    out.append(("after delete", admin.listed("list", "queues", "name")))
    run("import", str(export))
    out.append(("after import", admin.listed("list", "queues", "name", "durable")))
    out.append(
        (
            "bindings after import",
            admin.listed("list", "bindings", "source", "destination", "routing_key"),
        )
    )
    run("declare", "user", "name=watcher", "password=pw", "tags=monitoring")
    run("declare", "permission", "vhost=/", "user=watcher", "configure=", "write=.*", "read=.*")
    users = admin.listed("list", "users", "name", "tags")
    out.append(("users", users))
    out.append(
        (
            "permissions",
            admin.listed("list", "permissions", "user", "vhost", "configure", "write", "read"),
        )
    )
    run("delete", "user", "name=watcher")
    out.append(("after user delete", admin.listed("list", "users", "name")))
    run("declare", "vhost", "name=scenario-vhost")
    out.append(("vhosts", admin.listed("list", "vhosts", "name")))
    run("delete", "vhost", "name=scenario-vhost")
    out.append(("after vhost delete", admin.listed("list", "vhosts", "name")))
    client = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = client.channel()
        ch.basic_qos(prefetch_count=5)
        ch.basic_consume("q2", lambda *a: None, consumer_tag="scenario-consumer")
        columns = ("user", "vhost", "channels", "state", "protocol")
        connections = admin.listed("list", "connections", *columns, settled=_one_channel)
        out.append(("connections", connections))
        columns = ("queue.name", "consumer_tag", "ack_required", "prefetch_count", "exclusive")
        out.append(("consumers", admin.listed("list", "consumers", *columns, settled=bool)))
    finally:
        client.close()
    return out


def stamped_as_rabbitmq_4(answers: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """RabbitMQ 3.10's answers as RabbitMQ 4.0 gives them: 4.0 stamps ``x-queue-type:
    classic`` into the arguments of every queue declared without a type, which shows in the
    queue listing and the export (measured on 4.0.5: tests/management/
    test_queue_type_argument.py). The bundled broker follows 4.0, so this is the one
    expected difference from 3.10."""

    def stamp(queue: dict[str, Any]) -> dict[str, Any]:
        return {**queue, "arguments": {"x-queue-type": "classic", **queue["arguments"]}}

    stamped: list[tuple[str, Any]] = []
    for step, answer in answers:
        if step == "queues":
            answer = sorted(map(stamp, answer), key=_canonical)
        elif step == "export":
            answer = {**answer, "queues": sorted(map(stamp, answer["queues"]), key=_canonical)}
        stamped.append((step, answer))
    return stamped


def vhost_columns_honoured(answers: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """RabbitMQ 4.0's answers with the vhost listings cut to the column asked for (name):
    4.0.5 ignores ``columns`` on ``/api/vhosts`` alone (every other listing, and 3.10,
    honour it) and answers its paging with a 500, a fault the bundled broker does not copy
    (docs/rabbitmq-4-differences.md)."""
    return [
        (step, sorted(({"name": r["name"]} for r in answer), key=_canonical))
        if "vhost" in step
        else (step, answer)
        for step, answer in answers
    ]


@pytest.fixture(scope="module", params=[3, 4], ids=["rabbitmq3", "rabbitmq4"])
def rabbitmq_node(request: pytest.FixtureRequest) -> Iterator[tuple[int, str, str]]:
    """(major version, management URL, AMQP URL) of a private RabbitMQ 3.10 node
    (rabbitmqadmin's own version) or 4.0 node."""
    with private_rabbitmq_node(
        "with rabbitmq_management", major=request.param, plugins=("rabbitmq_management",)
    ) as node:
        yield request.param, node.management_url.removesuffix("api/"), node.url


def test_rabbitmqadmin_gives_the_same_answers_on_both_brokers(
    rabbitmq_node: tuple[int, str, str], tmp_path: Path
) -> None:
    if not RABBITMQADMIN.exists():
        reason = f"{RABBITMQADMIN} is missing (scripts/install-rabbitmq.sh installs it)"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    (tmp_path / "rabbitmq").mkdir()
    (tmp_path / "bundled").mkdir()
    major, management_url, amqp_url = rabbitmq_node
    reference = scenario(Admin(management_url, tmp_path / "rabbitmq"), amqp_url)
    reference = (stamped_as_rabbitmq_4 if major == 3 else vhost_columns_honoured)(reference)
    with Broker() as b:
        ours = scenario(Admin(b.management_url, tmp_path / "bundled"), b.url)
    differences = [
        (step, expected, got)
        for (step, expected), (_, got) in zip(reference, ours, strict=True)
        if got != expected
    ]
    assert differences == [], json.dumps(differences, indent=1)


def _script_or_skip(script: Path) -> None:
    if not script.exists():
        reason = f"{script} is missing (scripts/install-rabbitmq.sh, install-rabbitmq4.sh)"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.mark.parametrize("release", ["3.10", "4.0"])
def test_both_rabbitmqadmins_read_the_version_and_manage_policies(
    release: str, tmp_path: Path
) -> None:
    """Debian's rabbitmqadmin (3.10.8) and RabbitMQ 4.0.5's (the trixie root's) against the
    bundled broker, which reports the 4.0 release it follows: declare, list and delete a
    policy and an operator policy."""
    script = RABBITMQADMIN if release == "3.10" else rabbitmq4_root() / "usr/bin/rabbitmqadmin"
    _script_or_skip(script)
    with Broker() as b:
        admin = Admin(b.management_url, tmp_path, script)
        assert admin.json("show", "overview")[0]["rabbitmq_version"].startswith("4.0.")
        definition = 'definition={"max-length": 5}'
        admin.run("declare", "policy", "name=short", "pattern=^q", definition, "priority=1")
        admin.run("declare", "operator_policy", "name=cap", "pattern=^q", definition)
        admin.run("declare", "queue", "name=q1")
        assert admin.json("list", "policies", "name", "definition", "priority") == [
            {"name": "short", "definition": {"max-length": 5}, "priority": 1}
        ]
        assert admin.json("list", "operator_policies", "name") == [{"name": "cap"}]
        assert admin.json("list", "queues", "name", "policy", "operator_policy") == [
            {"name": "q1", "policy": "short", "operator_policy": "cap"}
        ]
        admin.run("delete", "policy", "name=short")
        admin.run("delete", "operator_policy", "name=cap")
        assert admin.json("list", "policies") == []
