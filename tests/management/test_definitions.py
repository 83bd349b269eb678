"""Definitions in RabbitMQ's format, both ways."""

from __future__ import annotations

import json
from pathlib import Path

from broker import Broker
from tests.management.conftest import Api

#: What RabbitMQ 3.10.8 exports (GET /api/definitions) for a small topology, trimmed of
#: nothing: users with list tags, vhosts with limits and metadata, empty policies.
RABBITMQ_EXPORT = {
    "rabbit_version": "3.10.8",
    "rabbitmq_version": "3.10.8",
    "product_name": "RabbitMQ",
    "product_version": "3.10.8",
    "users": [
        {
            "name": "app",
            "password_hash": "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR",
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": ["management"],
            "limits": {},
        }
    ],
    "vhosts": [
        {"name": "/"},
        {"name": "orders", "limits": [], "metadata": {"description": "", "tags": []}},
    ],
    "permissions": [
        {"user": "app", "vhost": "orders", "configure": "^app-", "write": ".*", "read": ".*"}
    ],
    "topic_permissions": [
        {"user": "app", "vhost": "orders", "exchange": "events", "write": "^app\\.", "read": ".*"}
    ],
    "parameters": [],
    "global_parameters": [{"name": "cluster_name", "value": "rabbit@host"}],
    "policies": [],
    "queues": [
        {
            "name": "app-q",
            "vhost": "orders",
            "durable": True,
            "auto_delete": False,
            "arguments": {"x-queue-type": "classic", "x-max-length": 100},
        }
    ],
    "exchanges": [
        {
            "name": "events",
            "vhost": "orders",
            "type": "topic",
            "durable": True,
            "auto_delete": False,
            "internal": False,
            "arguments": {},
        }
    ],
    "bindings": [
        {
            "source": "events",
            "vhost": "orders",
            "destination": "app-q",
            "destination_type": "queue",
            "routing_key": "app.#",
            "arguments": {},
        }
    ],
}


def test_a_rabbitmq_export_imports_and_exports_back(api: Api) -> None:
    assert api.call("POST", "/api/definitions", RABBITMQ_EXPORT)[0] == 204
    exported = api.get("/api/definitions")
    for section in ("queues", "exchanges", "bindings", "permissions", "topic_permissions"):
        for item in RABBITMQ_EXPORT[section]:
            assert item in exported[section], (section, item)
    app = next(u for u in exported["users"] if u["name"] == "app")
    assert app["tags"] == ["management"]
    assert app["password_hash"] == RABBITMQ_EXPORT["users"][0]["password_hash"]  # type: ignore[index]
    assert {v["name"] for v in exported["vhosts"]} == {"/", "orders"}
    assert api.get("/api/bindings/orders/e/events/q/app-q")[0]["routing_key"] == "app.#"


def test_an_export_imports_into_a_fresh_broker(api: Api) -> None:
    api.ok("PUT", "/api/vhosts/v2", {})
    api.ok("PUT", "/api/exchanges/v2/ex", {"type": "fanout", "durable": True})
    api.ok("PUT", "/api/queues/v2/q", {"durable": True, "arguments": {"x-message-ttl": 5000}})
    api.ok("POST", "/api/bindings/v2/e/ex/q/q", {"routing_key": "k"})
    exported = api.get("/api/definitions")
    with Broker() as other:
        other_api = Api(other.management_url)
        assert other_api.call("POST", "/api/definitions", exported)[0] == 204
        again = other_api.get("/api/definitions")
    for section in ("queues", "exchanges", "bindings", "vhosts", "permissions"):
        assert sorted(map(json.dumps, again[section])) == sorted(
            map(json.dumps, exported[section])
        ), section


def test_per_vhost_definitions_have_no_vhost_fields(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/q", {})
    exported = api.get("/api/definitions/%2F")
    assert exported["queues"] == [
        {
            "name": "q",
            "durable": False,  # a PUT without "durable" is transient, as on RabbitMQ
            "auto_delete": False,
            "arguments": {"x-queue-type": "classic"},  # stamped as RabbitMQ 4.0 does
        }
    ]
    api.ok("PUT", "/api/vhosts/copy", {})
    assert api.call("POST", "/api/definitions/copy", exported)[0] == 204
    assert [q["name"] for q in api.get("/api/queues/copy")] == ["q"]


def test_a_malformed_file_is_400_and_imports_nothing(api: Api) -> None:
    bad = {**RABBITMQ_EXPORT, "bindings": [{"source": "events"}]}
    status, body = api.call("POST", "/api/definitions", bad)
    assert status == 400 and "lacks" in body["reason"]
    assert "orders" not in [v["name"] for v in api.get("/api/vhosts")]
    assert "app" not in [u["name"] for u in api.get("/api/users")]


def test_a_file_naming_an_unknown_vhost_is_400(api: Api) -> None:
    doc = {"queues": [{"name": "q", "vhost": "nowhere", "durable": True}]}
    status, body = api.call("POST", "/api/definitions", doc)
    assert status == 400 and "unknown vhost 'nowhere'" in body["reason"]


def test_exclusive_queues_and_standard_exchanges_are_not_exported(
    broker: Broker, api: Api, channel: object
) -> None:
    channel.queue_declare("mine", exclusive=True)  # type: ignore[attr-defined]
    exported = api.get("/api/definitions")
    assert exported["queues"] == [] and exported["exchanges"] == []
    assert exported["bindings"] == []


def test_definitions_survive_a_restart_with_a_data_dir(tmp_path: Path) -> None:
    with Broker(data_dir=str(tmp_path)) as b:
        api = Api(b.management_url)
        api.ok("PUT", "/api/vhosts/kept", {})
        api.ok("PUT", "/api/users/kept-user", {"password": "pw", "tags": "monitoring"})
        api.ok(
            "PUT", "/api/permissions/kept/kept-user", {"configure": "", "write": ".*", "read": ".*"}
        )
    with Broker(data_dir=str(tmp_path)) as b:
        api = Api(b.management_url)
        assert "kept" in [v["name"] for v in api.get("/api/vhosts")]
        assert api.get("/api/permissions/kept/kept-user")["configure"] == ""
        assert Api(b.management_url, "kept-user", "pw").get("/api/whoami")["tags"] == ["monitoring"]
