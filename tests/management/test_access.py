"""Who may do what: basic auth, RabbitMQ's user tags and vhost permissions, and bad input
that must change nothing."""

from __future__ import annotations

import base64
import logging
import urllib.parse
from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from broker import Broker
from broker.management.auth import authenticate
from broker.management.rates import RateSampler
from broker.management.responses import ApiError
from broker.management.server import build_app
from tests.management.conftest import Api

NOT_FOUND = {"error": "Object Not Found", "reason": "Not Found"}


def _add_user(api: Api, name: str, tags: str, vhost_permissions: dict[str, str] | None) -> Api:
    api.ok("PUT", f"/api/users/{name}", {"password": f"{name}-pw", "tags": tags})
    if vhost_permissions is not None:
        api.ok("PUT", f"/api/permissions/%2F/{name}", vhost_permissions)
    return api.as_user(name, f"{name}-pw")


def test_no_credentials_is_401_with_a_basic_challenge(api: Api) -> None:
    status, raw, headers = api.raw("GET", "/api/overview", auth=False)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Basic")
    assert b'"error": "not_authorised"' in raw


def test_a_wrong_password_is_401_and_is_not_logged(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        status, body = api.as_user("guest", "s3cret-guess").call("GET", "/api/overview")
    assert (status, body) == (401, {"error": "not_authorised", "reason": "Login failed"})
    assert "s3cret-guess" not in caplog.text
    assert "refused for user 'guest'" in caplog.text


def test_a_user_without_a_management_tag_cannot_log_in(api: Api) -> None:
    plain = _add_user(api, "plain", "", {"configure": ".*", "write": ".*", "read": ".*"})
    assert plain.call("GET", "/api/overview") == (
        401,
        {"error": "not_authorised", "reason": "Not management user"},
    )


def test_management_users_see_their_vhosts_only_and_no_users(api: Api) -> None:
    api.ok("PUT", "/api/vhosts/other", {})
    api.ok("PUT", "/api/queues/other/hidden", {})
    api.ok("PUT", "/api/queues/%2F/shown", {})
    mgmt = _add_user(api, "mgmt", "management", {"configure": ".*", "write": ".*", "read": ".*"})
    assert [v["name"] for v in mgmt.get("/api/vhosts")] == ["/"]
    assert [q["name"] for q in mgmt.get("/api/queues")] == ["shown"]
    assert mgmt.call("GET", "/api/queues/other")[0] == 401
    assert mgmt.call("GET", "/api/users")[1]["reason"] == "Not administrator user"
    assert mgmt.call("GET", "/api/nodes")[1]["reason"] == "Not monitoring user"
    assert mgmt.get("/api/whoami") == {"name": "mgmt", "tags": ["management"]}


def test_monitoring_users_see_every_vhost_but_may_not_create_users(api: Api) -> None:
    api.ok("PUT", "/api/vhosts/other", {})
    mon = _add_user(api, "mon", "monitoring", None)
    assert [v["name"] for v in mon.get("/api/vhosts")] == ["/", "other"]
    assert len(mon.get("/api/nodes")) == 1
    status, _ = mon.call("PUT", "/api/users/x", {"password": "p", "tags": ""})
    assert status == 401
    assert "x" not in [u["name"] for u in api.get("/api/users")]


def test_declaring_needs_the_configure_permission_of_amqp(api: Api) -> None:
    app = _add_user(api, "app", "management", {"configure": "^app-", "write": ".*", "read": ".*"})
    assert app.call("PUT", "/api/queues/%2F/app-q", {})[0] == 201
    status, body = app.call("PUT", "/api/queues/%2F/other-q", {})
    assert status == 401
    assert body["reason"] == ("access to queue 'other-q' in vhost '/' refused for user 'app'")
    assert api.call("GET", "/api/queues/%2F/other-q")[0] == 404


def test_publishing_needs_write_and_getting_needs_read(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/q", {})
    ro = _add_user(api, "ro", "management", {"configure": "", "write": "", "read": ".*"})
    body = {"routing_key": "q", "payload": "x", "payload_encoding": "string", "properties": {}}
    assert ro.call("POST", "/api/exchanges/%2F/amq.default/publish", body)[0] == 401
    assert api.get("/api/queues/%2F/q")["messages"] == 0
    assert ro.ok("POST", "/api/queues/%2F/q/get", {"count": 1, "ackmode": "ack_requeue_true"}) == []


def _request_from(peer: str, app: web.Application) -> web.Request:
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (peer, 40000) if name == "peername" else default
    )
    token = base64.b64encode(b"guest:guest").decode()
    headers = {"Authorization": f"Basic {token}"}
    return make_mocked_request("GET", "/api/whoami", headers, app=app, transport=transport)


def test_guest_may_log_in_from_loopback_only(broker: Broker) -> None:
    app = build_app(broker.server, RateSampler())
    assert authenticate(_request_from("127.0.0.1", app)).name == "guest"
    assert authenticate(_request_from("::1", app)).name == "guest"
    with pytest.raises(ApiError) as refused:
        authenticate(_request_from("10.1.2.3", app))
    assert (refused.value.status, refused.value.reason) == (
        401,
        "User can only log in via localhost",
    )


def test_get_never_mutates(api: Api) -> None:
    assert api.call("GET", "/api/queues/%2F/new-q")[0] == 404
    assert api.call("GET", "/api/queues/%2F/new-q/contents")[0] == 405
    assert api.call("GET", "/api/exchanges/%2F/amq.direct/publish")[0] == 405
    assert api.call("GET", "/api/queues/%2F/new-q") == (404, NOT_FOUND)


def test_malformed_json_is_400_and_declares_nothing(api: Api) -> None:
    status, raw, _ = api.raw("PUT", "/api/queues/%2F/bad", b"{not json")
    assert status == 400 and b"failed to decode JSON" in raw
    status, raw, _ = api.raw("PUT", "/api/queues/%2F/bad", b"[1, 2]")
    assert status == 400 and b"expected a JSON object" in raw
    status, body = api.call("PUT", "/api/queues/%2F/bad", {"durable": "maybe"})
    assert status == 400 and body["reason"] == "durable='maybe': expected true or false"
    assert api.call("GET", "/api/queues/%2F/bad")[0] == 404


def test_an_oversized_body_is_413_and_publishes_nothing(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/big", {})
    payload = "x" * (21 << 20)
    body = {
        "routing_key": "big",
        "payload": payload,
        "payload_encoding": "string",
        "properties": {},
    }
    status, answer = api.call("POST", "/api/exchanges/%2F/amq.default/publish", body)
    assert status == 413 and answer["error"] == "bad_request"
    assert api.get("/api/queues/%2F/big")["messages"] == 0


def test_unknown_vhosts_and_objects_are_404(api: Api) -> None:
    assert api.call("GET", "/api/queues/nope") == (404, NOT_FOUND)
    assert api.call("PUT", "/api/queues/nope/q", {})[0] == 404
    assert api.call("GET", "/api/exchanges/%2F/nope") == (404, NOT_FOUND)
    assert api.call("GET", "/api/no-such-resource") == (404, NOT_FOUND)


def test_path_tricks_reach_no_other_object(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/a%2Fb", {})
    assert [q["name"] for q in api.get("/api/queues/%2F")] == ["a/b"]
    assert api.call("GET", "/api/queues/%2F/..%2F..%2Fusers")[0] == 404
    status, _, _ = api.raw("GET", "/api/queues/%2F/../../users")
    assert status in (400, 404)
    assert api.call("DELETE", "/api/queues/%2F/a")[0] == 404
    assert [q["name"] for q in api.get("/api/queues/%2F")] == ["a/b"]


def test_unknown_message_properties_are_400_naming_them(api: Api) -> None:
    body = {
        "routing_key": "q",
        "payload": "x",
        "payload_encoding": "string",
        "properties": {"colour": "red"},
    }
    status, answer = api.call("POST", "/api/exchanges/%2F/amq.default/publish", body)
    assert status == 400 and "['colour']" in answer["reason"]


def test_an_invalid_permission_regex_is_400_and_changes_nothing(api: Api) -> None:
    before = api.get("/api/permissions/%2F/guest")
    status, body = api.call(
        "PUT", "/api/permissions/%2F/guest", {"configure": "(", "write": ".*", "read": ".*"}
    )
    assert status == 400 and "configure='('" in body["reason"]
    assert api.get("/api/permissions/%2F/guest") == before


def test_closing_someone_elses_connection_needs_the_administrator_tag(
    api: Api, channel: object
) -> None:
    mon = _add_user(api, "mon", "monitoring", None)
    (conn,) = mon.get("/api/connections")
    path = "/api/connections/" + urllib.parse.quote(conn["name"], safe="")
    status, body = mon.call("DELETE", path)
    assert (status, body["reason"]) == (401, "Not administrator user")
    assert len(api.get("/api/connections")) == 1
    assert api.call("DELETE", path)[0] == 204
