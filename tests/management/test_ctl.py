"""``amqp-broker ctl``: rabbitmqctl's verbs over the HTTP API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker import Broker, cli
from tests.management.conftest import Api


def ctl(broker: Broker, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    status = cli.main(["ctl", "--url", broker.management_url, *args])
    out = capsys.readouterr()
    return status, out.out + out.err


def test_list_queues_prints_the_chosen_columns_tab_separated(
    broker: Broker, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    api.ok("PUT", "/api/queues/%2F/q1", {"durable": False})
    api.ok(
        "POST",
        "/api/exchanges/%2F/amq.default/publish",
        {"routing_key": "q1", "payload": "x", "payload_encoding": "string", "properties": {}},
    )
    assert ctl(broker, capsys, "list_queues", "name", "messages", "durable") == (
        0,
        "Listing queues for vhost / ...\nname\tmessages\tdurable\nq1\t1\tfalse\n",
    )
    assert ctl(broker, capsys, "-s", "list_queues") == (0, "q1\t1\n")


def test_list_exchanges_bindings_and_consumers(
    broker: Broker, api: Api, channel: object, capsys: pytest.CaptureFixture[str]
) -> None:
    channel.queue_declare("c")  # type: ignore[attr-defined]
    channel.basic_consume("c", lambda *a: None, consumer_tag="tag-1")  # type: ignore[attr-defined]
    status, out = ctl(broker, capsys, "-q", "list_exchanges", "name", "type")
    assert status == 0 and "amq.topic\ttopic" in out.splitlines()
    status, out = ctl(
        broker, capsys, "-s", "list_bindings", "source_name", "destination_name", "routing_key"
    )
    assert out == "\tc\tc\n"
    status, out = ctl(
        broker, capsys, "-s", "list_consumers", "queue_name", "consumer_tag", "ack_required"
    )
    assert out == "c\ttag-1\ttrue\n"
    status, out = ctl(broker, capsys, "-s", "list_connections", "user", "state")
    assert out == "guest\trunning\n"


def test_users_and_permissions(
    broker: Broker, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ctl(broker, capsys, "add_user", "bob", "pw1")[0] == 0
    assert ctl(broker, capsys, "set_user_tags", "bob", "monitoring")[0] == 0
    assert ctl(broker, capsys, "set_permissions", "bob", "^bob-", ".*", ".*")[0] == 0
    assert ctl(broker, capsys, "set_topic_permissions", "bob", "amq.topic", "^x", ".*")[0] == 0
    assert Api(broker.management_url, "bob", "pw1").get("/api/whoami")["tags"] == ["monitoring"]
    assert ctl(broker, capsys, "change_password", "bob", "pw2")[0] == 0
    assert Api(broker.management_url, "bob", "pw2").get("/api/whoami")["name"] == "bob"
    status, out = ctl(broker, capsys, "-s", "list_permissions")
    assert "bob\t^bob-\t.*\t.*" in out.splitlines()
    status, out = ctl(broker, capsys, "-s", "list_topic_permissions")
    assert out == "bob\tamq.topic\t^x\t.*\n"
    assert ctl(broker, capsys, "delete_user", "bob")[0] == 0
    assert "bob" not in [u["name"] for u in api.get("/api/users")]


def test_definitions_round_trip_through_files(
    broker: Broker, api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.ok("PUT", "/api/queues/%2F/kept", {})
    path = tmp_path / "defs.json"
    assert ctl(broker, capsys, "export_definitions", str(path))[0] == 0
    assert [q["name"] for q in json.loads(path.read_text())["queues"]] == ["kept"]
    api.ok("DELETE", "/api/queues/%2F/kept")
    assert ctl(broker, capsys, "import_definitions", str(path))[0] == 0
    assert api.get("/api/queues/%2F/kept")["name"] == "kept"


def test_purge_close_connection_and_status(
    broker: Broker, api: Api, channel: object, capsys: pytest.CaptureFixture[str]
) -> None:
    channel.queue_declare("p")  # type: ignore[attr-defined]
    channel.basic_publish("", "p", b"x")  # type: ignore[attr-defined]
    assert ctl(broker, capsys, "purge_queue", "p")[0] == 0
    assert api.get("/api/queues/%2F/p")["messages"] == 0
    status, out = ctl(broker, capsys, "status")
    assert status == 0 and f"amqp: 127.0.0.1:{broker.port}" in out
    (conn,) = api.get("/api/connections")
    assert ctl(broker, capsys, "close_connection", conn["name"], "go away")[0] == 0
    with pytest.raises(Exception, match="go away"):
        channel.queue_declare("p")  # type: ignore[attr-defined]


def test_errors_name_the_problem_and_set_rabbitmqctls_exit_codes(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = ctl(broker, capsys, "purge_queue", "missing")
    assert status == 70 and "404 Not Found" in out
    assert ctl(broker, capsys, "add_user", "only-a-name")[0] == 64
    status, out = ctl(broker, capsys, "--password", "wrong", "status")
    assert status == 70 and "401 Login failed" in out
    capsys.readouterr()
    assert cli.main(["ctl", "--url", "http://127.0.0.1:9/", "status"]) == 69
