"""Queues, exchanges and bindings through the API: RabbitMQ's paths, shapes and statuses."""

from __future__ import annotations

import urllib.parse
from typing import Any

from tests.management.conftest import Api


def test_putting_a_queue_creates_it_then_answers_204(api: Api) -> None:
    assert api.call("PUT", "/api/queues/%2F/q1", {"durable": False})[0] == 201
    assert api.call("PUT", "/api/queues/%2F/q1", {"durable": "false"})[0] == 204
    q = api.get("/api/queues/%2F/q1")
    assert (q["name"], q["vhost"], q["durable"], q["type"]) == ("q1", "/", False, "classic")
    assert (q["messages"], q["messages_ready"], q["messages_unacknowledged"]) == (0, 0, 0)


def test_an_inequivalent_redeclaration_is_400_with_rabbitmqs_reason(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/q1", {"durable": True})
    status, body = api.call("PUT", "/api/queues/%2F/q1", {"durable": False})
    assert status == 400
    assert body == {
        "error": "bad_request",
        "reason": "inequivalent arg 'durable' for queue 'q1' in vhost '/': "
        "received 'false' but current is 'true'",
    }


def test_published_messages_are_got_requeued_or_acked_as_ackmode_says(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/work", {})
    for i in range(3):
        routed = api.ok(
            "POST",
            "/api/exchanges/%2F/amq.default/publish",
            {
                "routing_key": "work",
                "payload": f"m{i}",
                "payload_encoding": "string",
                "properties": {"delivery_mode": 2, "headers": {"k": "v"}},
            },
        )
        assert routed == {"routed": True}
    got = api.ok(
        "POST",
        "/api/queues/%2F/work/get",
        {"count": 2, "ackmode": "ack_requeue_true", "encoding": "auto"},
    )
    assert [m["payload"] for m in got] == ["m0", "m1"]
    assert [m["message_count"] for m in got] == [2, 1]
    assert got[0]["properties"] == {"delivery_mode": 2, "headers": {"k": "v"}}
    assert api.get("/api/queues/%2F/work")["messages"] == 3
    again = api.ok("POST", "/api/queues/%2F/work/get", {"count": 5, "ackmode": "ack_requeue_false"})
    assert [(m["payload"], m["redelivered"]) for m in again] == [
        ("m0", True),
        ("m1", True),
        ("m2", False),
    ]
    assert api.get("/api/queues/%2F/work")["messages"] == 0


def test_a_binary_payload_comes_back_in_base64(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/bin", {})
    api.ok(
        "POST",
        "/api/exchanges/%2F/amq.default/publish",
        {"routing_key": "bin", "payload": "/w==", "payload_encoding": "base64", "properties": {}},
    )
    (got,) = api.ok("POST", "/api/queues/%2F/bin/get", {"count": 1, "ackmode": "ack_requeue_false"})
    assert (got["payload"], got["payload_encoding"], got["payload_bytes"]) == ("/w==", "base64", 1)


def test_an_unrouted_publish_says_so(api: Api) -> None:
    body = {
        "routing_key": "nowhere",
        "payload": "x",
        "payload_encoding": "string",
        "properties": {},
    }
    assert api.ok("POST", "/api/exchanges/%2F/amq.direct/publish", body) == {"routed": False}


def test_purging_empties_the_queue_and_deleting_removes_it(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/p", {})
    api.ok(
        "POST",
        "/api/exchanges/%2F/amq.default/publish",
        {"routing_key": "p", "payload": "x", "payload_encoding": "string", "properties": {}},
    )
    assert api.call("DELETE", "/api/queues/%2F/p/contents")[0] == 204
    assert api.get("/api/queues/%2F/p")["messages"] == 0
    assert api.call("DELETE", "/api/queues/%2F/p")[0] == 204
    assert api.call("GET", "/api/queues/%2F/p") == (
        404,
        {"error": "Object Not Found", "reason": "Not Found"},
    )


def test_deleting_a_queue_if_empty_keeps_a_queue_with_messages(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/full", {})
    api.ok(
        "POST",
        "/api/exchanges/%2F/amq.default/publish",
        {"routing_key": "full", "payload": "x", "payload_encoding": "string", "properties": {}},
    )
    status, body = api.call("DELETE", "/api/queues/%2F/full?if-empty=true")
    assert status == 400 and "not empty" in body["reason"]
    assert api.get("/api/queues/%2F/full")["messages"] == 1


def test_exchanges_are_declared_listed_and_deleted(api: Api) -> None:
    assert api.call("PUT", "/api/exchanges/%2F/ex1", {"type": "topic", "durable": True})[0] == 201
    ex = api.get("/api/exchanges/%2F/ex1")
    assert (ex["type"], ex["durable"], ex["internal"], ex["auto_delete"]) == (
        "topic",
        True,
        False,
        False,
    )
    names = [e["name"] for e in api.get("/api/exchanges/%2F")]
    assert names == sorted(names) and "" in names and "ex1" in names
    assert api.call("DELETE", "/api/exchanges/%2F/ex1")[0] == 204
    assert api.call("GET", "/api/exchanges/%2F/ex1")[0] == 404


def test_a_reserved_exchange_name_is_refused(api: Api) -> None:
    status, body = api.call("PUT", "/api/exchanges/%2F/amq.mine", {"type": "direct"})
    assert status == 401 and "reserved prefix 'amq.*'" in body["reason"]


def _binding_keys(bindings: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [
        (b["source"], b["destination"], b["destination_type"], b["routing_key"]) for b in bindings
    ]


def test_bindings_in_all_forms(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/bq", {})
    api.ok("PUT", "/api/exchanges/%2F/src", {"type": "direct"})
    api.ok("PUT", "/api/exchanges/%2F/dst", {"type": "fanout"})
    status, answer = api.call("POST", "/api/bindings/%2F/e/src/q/bq", {"routing_key": "rk"})
    assert status == 201 and answer is None
    api.ok("POST", "/api/bindings/%2F/e/src/e/dst", {"routing_key": "x", "arguments": {"a": 1}})
    assert _binding_keys(api.get("/api/bindings/%2F/e/src/q/bq")) == [("src", "bq", "queue", "rk")]
    (e2e,) = api.get("/api/bindings/%2F/e/src/e/dst")
    assert e2e["arguments"] == {"a": 1} and e2e["properties_key"].startswith("x~")
    assert ("", "bq", "queue", "bq") in _binding_keys(api.get("/api/bindings/%2F"))
    assert _binding_keys(api.get("/api/queues/%2F/bq/bindings")) == [
        ("", "bq", "queue", "bq"),
        ("src", "bq", "queue", "rk"),
    ]
    assert len(api.get("/api/exchanges/%2F/src/bindings/source")) == 2
    assert api.get("/api/bindings/%2F/e/src/q/bq/rk")["routing_key"] == "rk"
    assert api.call("DELETE", "/api/bindings/%2F/e/src/q/bq/rk")[0] == 204
    assert api.call("DELETE", f"/api/bindings/%2F/e/src/e/dst/{e2e['properties_key']}")[0] == 204
    assert api.get("/api/exchanges/%2F/src/bindings/source") == []


def test_list_paging_sorting_filtering_and_columns(api: Api) -> None:
    for name in ("alpha", "beta", "gamma", "delta"):
        api.ok("PUT", f"/api/queues/%2F/{name}", {})
    assert [q["name"] for q in api.get("/api/queues")] == ["alpha", "beta", "delta", "gamma"]
    assert [q["name"] for q in api.get("/api/queues?sort=name&sort_reverse=true")] == [
        "gamma",
        "delta",
        "beta",
        "alpha",
    ]
    assert api.get("/api/queues?columns=name,messages&name=eta") == [
        {"name": "beta", "messages": 0}
    ]
    assert [q["name"] for q in api.get("/api/queues?name=^(a|g)&use_regex=true")] == [
        "alpha",
        "gamma",
    ]
    page = api.get("/api/queues?page=2&page_size=3&columns=name")
    assert page == {
        "filtered_count": 4,
        "item_count": 1,
        "items": [{"name": "gamma"}],
        "page": 2,
        "page_count": 2,
        "page_size": 3,
        "total_count": 4,
    }
    assert api.call("GET", "/api/queues?page=3&page_size=3")[0] == 400


def test_connections_channels_and_consumers_are_listed_and_linked(api: Api, channel: Any) -> None:
    channel.queue_declare("watched")
    channel.basic_qos(prefetch_count=7)
    channel.basic_consume("watched", lambda *a: None, consumer_tag="c1")
    (conn,) = api.get("/api/connections")
    assert (conn["user"], conn["vhost"], conn["protocol"], conn["channels"]) == (
        "guest",
        "/",
        "AMQP 0-9-1",
        1,
    )
    assert conn["client_properties"]["product"] == "Pika Python Client Library"
    quoted = urllib.parse.quote(conn["name"], safe="")
    (ch,) = api.get(f"/api/connections/{quoted}/channels")
    assert (ch["number"], ch["consumer_count"], ch["prefetch_count"]) == (1, 1, 7)
    detail = api.get(f"/api/channels/{urllib.parse.quote(ch['name'], safe='')}")
    assert [c["consumer_tag"] for c in detail["consumer_details"]] == ["c1"]
    (consumer,) = api.get("/api/consumers/%2F")
    assert consumer["queue"] == {"name": "watched", "vhost": "/"}
    assert consumer["channel_details"]["connection_name"] == conn["name"]
    assert api.get("/api/queues/%2F/watched")["consumer_details"][0]["consumer_tag"] == "c1"
    assert api.call("GET", "/api/connections/nope")[0] == 404
