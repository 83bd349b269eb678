"""Policies, operator policies and vhost limits over the HTTP API and the CLI, the same
scenarios run against the bundled broker and a private RabbitMQ 4 node with the management
plugin: the API's answers and reasons, which policy a queue or an exchange shows
(``policy``, ``operator_policy``, ``effective_policy_definition``), what a policy does to
the queues it applies to (at declaration, and when it is set, changed or cleared), and the
refusals a client sees past a limit. Every expected value was measured on RabbitMQ 4.0.5
(the rules are those of broker/model/policies.py; tests/model/test_policies.py checks them
in-process).

RabbitMQ's API shows a queue's policy from its statistics, which it collects every few
seconds: the checks of what a queue shows wait for it (``shown``)."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pika
import pytest

from broker import Broker, cli
from tests.management.conftest import Api
from tests.support.fixtures import private_rabbitmq_node


@dataclass
class Node:
    """One broker under test: its API, its AMQP URL, its CLI, and what a test made there."""

    name: str
    api: Api
    url: str
    ctl: Callable[..., str]
    queues: list[str] = field(default_factory=list)
    exchanges: list[str] = field(default_factory=list)

    def channel(self) -> Any:
        connection = pika.BlockingConnection(pika.URLParameters(self.url))
        self._connections.append(connection)
        return connection.channel()

    _connections: list[Any] = field(default_factory=list)

    def clean(self) -> None:
        for connection in self._connections:
            with contextlib.suppress(pika.exceptions.AMQPError):
                connection.close()
        self._connections.clear()
        for kind in ("policies", "operator-policies"):
            for p in self.api.get(f"/api/{kind}/%2F"):
                self.api.call("DELETE", f"/api/{kind}/%2F/{p['name']}")
        for limit in ("max-queues", "max-connections"):
            self.api.call("DELETE", f"/api/vhost-limits/%2F/{limit}")
        for name in self.queues:
            self.api.call("DELETE", f"/api/queues/%2F/{name}")
        for name in self.exchanges:
            self.api.call("DELETE", f"/api/exchanges/%2F/{name}")
        self.queues.clear()
        self.exchanges.clear()


def _bundled_ctl(broker: Broker) -> Callable[..., str]:
    def ctl(*args: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = cli.main(["ctl", "--url", broker.management_url, *args])
        assert status == 0, out.getvalue()
        return out.getvalue()

    return ctl


@pytest.fixture(
    scope="module", params=["bundled", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]
)
def node(request: pytest.FixtureRequest) -> Iterator[Node]:
    if request.param == "bundled":
        with Broker() as b:
            yield Node("bundled", Api(b.management_url), b.url, _bundled_ctl(b))
        return
    with private_rabbitmq_node(
        "with rabbitmq_management", plugins=("rabbitmq_management",)
    ) as rabbitmq:
        api = Api(rabbitmq.management_url.removesuffix("/api/"))
        yield Node("rabbitmq", api, rabbitmq.url, rabbitmq.ctl)


@pytest.fixture
def on(node: Node) -> Iterator[Node]:
    """The module's node, cleaned of what the test set and made there afterwards."""
    try:
        yield node
    finally:
        node.clean()


def shown(node: Node, path: str, keys: tuple[str, ...], expected: dict[str, Any]) -> None:
    """Wait (RabbitMQ: up to its statistics interval and more) until the object at ``path``
    shows ``expected`` for ``keys``; fail with what it shows otherwise."""
    deadline = time.monotonic() + 15
    while True:
        got = {k: node.api.get(path).get(k, "absent") for k in keys}
        if got == expected or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert got == expected


def counted(channel: Any, queue: str, expected: int) -> None:
    """Wait until ``queue`` counts ``expected`` messages: RabbitMQ 4's passive declare
    may count publishes made just before it on the same channel only a moment later."""
    deadline = time.monotonic() + 5
    while (count := channel.queue_declare(queue, passive=True).method.message_count) != expected:
        assert time.monotonic() < deadline, f"{queue} counts {count}, not {expected}"
        time.sleep(0.1)


POLICY_FIELDS = ("policy", "operator_policy", "effective_policy_definition")


def applied(policy: str | None, operator: str | None, effective: dict[str, Any]) -> dict[str, Any]:
    """What a queue shows of the policies applied to it."""
    return dict(zip(POLICY_FIELDS, (policy, operator, effective), strict=True))


def _put(node: Node, name: str, body: dict[str, Any], kind: str = "policies") -> int:
    status, _ = node.api.call("PUT", f"/api/{kind}/%2F/{name}", body)
    return status


# -- the API --------------------------------------------------------------------------------


def test_the_api_reports_the_rabbitmq_4_0_release_it_follows(on: Node) -> None:
    overview = on.api.get("/api/overview")
    assert overview["rabbitmq_version"].startswith("4.0.")
    assert overview["management_version"].startswith("4.0.")
    assert overview["product_version"] and overview["product_name"]


@pytest.mark.parametrize("kind", ["policies", "operator-policies"])
def test_a_policy_is_created_replaced_shown_listed_and_cleared(on: Node, kind: str) -> None:
    body = {"pattern": "^q", "definition": {"max-length": 5}, "priority": 2, "apply-to": "queues"}
    assert _put(on, "p1", body, kind) == 201
    assert _put(on, "p1", {**body, "priority": 3}, kind) == 204
    assert _put(on, "p0", {"pattern": "^r", "definition": {"message-ttl": 5}}, kind) == 201
    expected: dict[str, object] = {
        "vhost": "/",
        "name": "p1",
        "pattern": "^q",
        "apply-to": "queues",
    }
    expected |= {"definition": {"max-length": 5}, "priority": 3}
    assert on.api.get(f"/api/{kind}/%2F/p1") == expected
    defaults: dict[str, object] = {"vhost": "/", "name": "p0", "pattern": "^r", "apply-to": "all"}
    defaults |= {"definition": {"message-ttl": 5}, "priority": 0}
    assert on.api.get(f"/api/{kind}/%2F") == [defaults, expected]  # by priority
    assert on.api.get(f"/api/{kind}") == [defaults, expected]
    assert on.api.call("DELETE", f"/api/{kind}/%2F/p1") == (204, None)
    not_found = {"error": "Object Not Found", "reason": "Not Found"}
    assert on.api.call("DELETE", f"/api/{kind}/%2F/p1") == (404, not_found)
    assert on.api.call("GET", f"/api/{kind}/%2F/p1") == (404, not_found)
    # (RabbitMQ 4.0.5 answers an operator policy's PUT there with a bare 500, a fault the
    # bundled broker does not copy: docs/rabbitmq-4-differences.md.)
    if kind == "policies":
        assert on.api.call("PUT", f"/api/{kind}/nosuch/p1", body) == (
            404,
            {"error": "not_found", "reason": "vhost_not_found"},
        )


REFUSED = [
    (
        {"pattern": "^x", "definition": {"max-length": 5}, "apply-to": "bogus"},
        "Validation failed\n\napply-to 'bogus' unrecognised; should be one of: 'queues', "
        "'classic_queues',  'quorum_queues', 'streams', 'exchanges', or 'all'\n",
    ),
    (
        {"pattern": "^x", "definition": {"bogus-key": 5}},
        'Validation failed\n\n[{&lt;&lt;"bogus-key"&gt;&gt;,5}] are not recognised policy '
        "settings\n",
    ),
    (
        {"pattern": "^x", "definition": {"max-length": -1}},
        "Validation failed\n\n-1 is not a valid maximum length\n",
    ),
    (
        {"pattern": "^x", "definition": {"max-length": "5"}},
        'Validation failed\n\n&lt;&lt;"5"&gt;&gt; is not a valid maximum length\n',
    ),
    ({"definition": {"max-length": 5}}, "[{key_missing,pattern}]"),
    ({"pattern": "^x"}, "[{key_missing,definition}]"),
    ({"pattern": "^x", "definition": {}}, "Validation failed\n\nno policy provided\n"),
    (
        {"pattern": "^x", "definition": {"max-length": 5}, "priority": "7"},
        'Validation failed\n\npriority should be a number, actually was &lt;&lt;"7"&gt;&gt;\n',
    ),
    (
        {"pattern": "^x", "definition": {"alternate-exchange": 5}},
        "Validation failed\n\n5 is not a valid alternate exchange name\n",
    ),
]


@pytest.mark.parametrize(("body", "reason"), REFUSED)
def test_a_policy_rabbitmq_refuses_is_refused_with_its_reason(
    on: Node, body: dict[str, Any], reason: str
) -> None:
    status, answer = on.api.call("PUT", "/api/policies/%2F/bad", body)
    assert (status, answer) == (400, {"error": "bad_request", "reason": reason})
    assert on.api.get("/api/policies/%2F") == []


def test_an_operator_policy_refuses_what_operators_cannot_cap(on: Node) -> None:
    body = {"pattern": "^x", "definition": {"dead-letter-exchange": "x"}}
    reason = (
        'Validation failed\n\n[{<<"dead-letter-exchange">>,<<"x">>}] are not recognised '
        "policy settings\n"
    )
    assert on.api.call("PUT", "/api/operator-policies/%2F/o", body) == (
        400,
        {"error": "bad_request", "reason": reason},
    )


# -- what queues and exchanges show and do ---------------------------------------------------


def test_a_queue_shows_the_policy_and_operator_policy_that_apply_to_it(on: Node) -> None:
    on.queues += ["lim1", "plain"]
    channel = on.channel()
    channel.queue_declare("lim1", arguments={"x-max-length": 3})
    channel.queue_declare("plain")
    _put(on, "low", {"pattern": "^lim", "definition": {"max-length": 9}, "priority": 0})
    _put(
        on,
        "limit",
        {
            "pattern": "^lim",
            "definition": {"max-length": 5, "message-ttl": 60000},
            "priority": 1,
            "apply-to": "queues",
        },
    )
    _put(
        on,
        "op",
        {"pattern": "^lim", "definition": {"max-length": 2, "message-ttl": 1000}},
        "operator-policies",
    )
    effective = {"max-length": 2, "message-ttl": 1000}
    shown(
        on,
        "/api/queues/%2F/lim1",
        POLICY_FIELDS,
        applied("limit", "op", effective),
    )
    shown(
        on,
        "/api/queues/%2F/plain",
        POLICY_FIELDS,
        applied(None, None, {}),
    )
    listed = {q["name"]: q.get("policy") for q in on.api.get("/api/queues/%2F")}
    assert listed["lim1"] == "limit"
    assert on.api.get("/api/queues/%2F/lim1")["arguments"] == {
        "x-max-length": 3,
        "x-queue-type": "classic",
    }
    # The lowest limit of the three applies: 2 of 5 messages stay.
    for i in range(5):
        channel.basic_publish("", "lim1", str(i).encode())
    counted(channel, "lim1", 2)


def test_a_policy_set_later_applies_to_an_existing_queue_and_clearing_it_lifts_it(
    on: Node,
) -> None:
    on.queues.append("exist1")
    channel = on.channel()
    channel.queue_declare("exist1")
    for i in range(10):
        channel.basic_publish("", "exist1", str(i).encode())
    counted(channel, "exist1", 10)
    _put(on, "ex", {"pattern": "^exist", "definition": {"max-length": 3}})
    counted(channel, "exist1", 3)
    assert channel.basic_get("exist1", auto_ack=True)[2] == b"7"  # the oldest went
    shown(on, "/api/queues/%2F/exist1", ("policy",), {"policy": "ex"})
    assert on.api.call("DELETE", "/api/policies/%2F/ex")[0] == 204
    shown(on, "/api/queues/%2F/exist1", ("policy",), {"policy": None})
    for _ in range(5):
        channel.basic_publish("", "exist1", b"more")
    counted(channel, "exist1", 7)


def test_a_policy_with_a_key_a_queue_type_lacks_does_not_apply_to_it(on: Node) -> None:
    on.queues += ["qq1", "st1"]
    _put(on, "qa", {"pattern": "^(qq|st)", "definition": {"max-age": "1D"}, "priority": 5})
    _put(on, "qb", {"pattern": "^(qq|st)", "definition": {"max-length": 7}, "priority": 1})
    channel = on.channel()
    channel.queue_declare("qq1", durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_declare("st1", durable=True, arguments={"x-queue-type": "stream"})
    shown(
        on,
        "/api/queues/%2F/qq1",
        POLICY_FIELDS,
        applied("qb", None, {"max-length": 7}),
    )
    shown(
        on,
        "/api/queues/%2F/st1",
        POLICY_FIELDS,
        applied("qa", None, {"max-age": "1D"}),
    )


def test_a_classic_queues_own_overflow_wins_a_quorum_queues_policy_wins(on: Node) -> None:
    on.queues += ["rp-classic", "rp-quorum"]
    definition = {"max-length": 1, "overflow": "reject-publish"}
    _put(on, "rp", {"pattern": "^rp-", "definition": definition})
    channel = on.channel()
    channel.confirm_delivery()
    channel.queue_declare("rp-classic", arguments={"x-overflow": "drop-head"})
    quorum = {"x-queue-type": "quorum", "x-overflow": "drop-head"}
    channel.queue_declare("rp-quorum", durable=True, arguments=quorum)
    for name in ("rp-classic", "rp-quorum"):
        shown(on, f"/api/queues/%2F/{name}", ("policy",), {"policy": "rp"})
    refused = {}
    for name in ("rp-classic", "rp-quorum"):
        refused[name] = 0
        for _ in range(3):
            try:
                channel.basic_publish("", name, b"x", mandatory=False)
            except pika.exceptions.NackError:
                refused[name] += 1
    # drop-head: every publish confirmed, one kept; reject-publish: past one, refused
    assert refused == {"rp-classic": 0, "rp-quorum": 1}
    counted(channel, "rp-classic", 1)


def test_a_policy_gives_an_exchange_without_one_its_alternate_exchange(on: Node) -> None:
    on.exchanges += ["xa", "ae-target"]
    on.queues.append("ae-q")
    channel = on.channel()
    channel.exchange_declare("xa", "direct")
    channel.exchange_declare("ae-target", "fanout")
    channel.queue_declare("ae-q")
    channel.queue_bind("ae-q", "ae-target")
    body = {"pattern": "^xa$", "definition": {"alternate-exchange": "ae-target"}}
    _put(on, "ae", {**body, "apply-to": "exchanges"})
    shown(on, "/api/exchanges/%2F/xa", ("policy",), {"policy": "ae"})
    assert "policy" not in on.api.get("/api/exchanges/%2F/amq.direct")
    channel.basic_publish("xa", "nowhere", b"unroutable")
    counted(channel, "ae-q", 1)


# -- definitions -------------------------------------------------------------------------------


def test_definitions_export_policies_and_operator_policies_and_import_them(on: Node) -> None:
    _put(on, "exp", {"pattern": "^e", "definition": {"max-length": 4}, "priority": 1})
    _put(on, "cap", {"pattern": "^e", "definition": {"max-length": 2}}, "operator-policies")
    exported = on.api.get("/api/definitions")
    policy: dict[str, object] = {"vhost": "/", "name": "exp", "pattern": "^e", "apply-to": "all"}
    policy |= {"definition": {"max-length": 4}, "priority": 1}
    assert exported["policies"] == [policy]
    operator = [p for p in exported["parameters"] if p["component"] == "operator_policy"]
    assert operator == [
        {
            "value": {
                "pattern": "^e",
                "definition": {"max-length": 2},
                "priority": 0,
                "apply-to": "all",
            },
            "vhost": "/",
            "component": "operator_policy",
            "name": "cap",
        }
    ]
    per_vhost = on.api.get("/api/definitions/%2F")["policies"]
    assert per_vhost == [{k: v for k, v in policy.items() if k != "vhost"}]
    on.clean()
    on.api.ok(
        "POST", "/api/definitions", {"policies": exported["policies"], "parameters": operator}
    )
    assert on.api.get("/api/policies/%2F/exp") == policy
    assert on.api.get("/api/operator-policies/%2F/cap")["definition"] == {"max-length": 2}


# -- vhost limits ----------------------------------------------------------------------------


def test_vhost_limits_are_set_listed_refused_and_cleared(on: Node) -> None:
    assert on.api.call("PUT", "/api/vhost-limits/%2F/max-queues", {"value": 100}) == (204, None)
    assert on.api.get("/api/vhost-limits/%2F") == [{"vhost": "/", "value": {"max-queues": 100}}]
    exported = on.api.get("/api/definitions/%2F")
    assert exported["limits"] == {"max-queues": 100}
    limits = {"value": {"max-queues": 100}, "component": "vhost-limits", "name": "limits"}
    assert limits in exported["parameters"]
    assert {**limits, "vhost": "/"} in on.api.get("/api/definitions")["parameters"]
    assert {"vhost": "/", "value": {"max-queues": 100}} in on.api.get("/api/vhost-limits")
    for limit, body, reason in (
        (
            "max-connections",
            {"value": "x"},
            'max-connections should be a number, actually was <<"x">>',
        ),
        ("max-bogus", {"value": 3}, 'Unrecognised terms [{<<"max-bogus">>,3}] in limits'),
    ):
        assert on.api.call("PUT", f"/api/vhost-limits/%2F/{limit}", body) == (
            400,
            {"error": "bad_request", "reason": f"Validation failed\n\n{reason}\n"},
        )
    assert on.api.call("PUT", "/api/vhost-limits/%2F/max-queues", {}) == (
        400,
        {"error": "bad_request", "reason": "[{key_missing,value}]"},
    )
    assert on.api.call("DELETE", "/api/vhost-limits/%2F/max-queues") == (204, None)
    assert on.api.get("/api/vhost-limits/%2F") == []


def test_past_max_queues_a_new_queue_is_refused_as_rabbitmq_refuses_it(on: Node) -> None:
    on.queues += ["kept", "over", "over-api"]
    channel = on.channel()
    channel.queue_declare("kept")
    count = len(on.api.get("/api/queues/%2F"))
    on.api.ok("PUT", "/api/vhost-limits/%2F/max-queues", {"value": count})
    assert channel.queue_declare("kept").method.queue == "kept"  # an existing one is fine
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as e:
        channel.queue_declare("over")
    reason = f"cannot declare queue 'over': queue limit in vhost '/' ({count}) is reached"
    assert (e.value.reply_code, e.value.reply_text) == (406, f"PRECONDITION_FAILED - {reason}")
    reason = reason.replace("'over'", "'over-api'")
    assert on.api.call("PUT", "/api/queues/%2F/over-api", {}) == (
        400,
        {"error": "bad_request", "reason": reason},
    )


def test_past_max_connections_a_connection_is_refused_as_rabbitmq_refuses_it(on: Node) -> None:
    on.channel()  # one connection open
    on.api.ok("PUT", "/api/vhost-limits/%2F/max-connections", {"value": 1})
    deadline = time.monotonic() + 10
    while True:  # RabbitMQ counts connections in its tracking tables, a moment behind
        try:
            pika.BlockingConnection(pika.URLParameters(on.url)).close()
        except pika.exceptions.ProbableAccessDeniedError as e:  # pika's name for a 530 here
            refused = str(e)
            break
        assert time.monotonic() < deadline, "no connection was refused"
        time.sleep(0.2)
    assert (
        "(530) \"NOT_ALLOWED - access to vhost '/' refused for user 'guest': connection "
        'limit (1) is reached"'
    ) in refused


# -- the CLI ---------------------------------------------------------------------------------


def test_set_policy_over_the_cli_applies_and_lists_as_rabbitmqctl_lists_it(on: Node) -> None:
    on.queues.append("cp1")
    on.ctl("set_policy", "--priority", "2", "--apply-to", "queues", "cp", "^cp", '{"max-length":4}')
    on.ctl("set_operator_policy", "cap", "^cp", '{"max-length":3}')
    on.channel().queue_declare("cp1")
    shown(
        on,
        "/api/queues/%2F/cp1",
        POLICY_FIELDS,
        applied("cp", "cap", {"max-length": 3}),
    )
    assert on.ctl("list_policies", "-q") == (
        "vhost\tname\tpattern\tapply-to\tdefinition\tpriority\n"
        '/\tcp\t^cp\tqueues\t{"max-length":4}\t2\n'
    )
    assert on.ctl("list_operator_policies", "-q").splitlines()[1] == (
        '/\tcap\t^cp\tall\t{"max-length":3}\t0'
    )
    on.ctl("clear_policy", "cp")
    on.ctl("clear_operator_policy", "cap")
    shown(
        on,
        "/api/queues/%2F/cp1",
        ("policy", "operator_policy"),
        {"policy": None, "operator_policy": None},
    )
    on.ctl("set_vhost_limits", '{"max-queues": 100}')
    assert on.ctl("list_vhost_limits", "-q") == '{"max-queues":100}\n'
    on.ctl("clear_vhost_limits")
    assert on.api.get("/api/vhost-limits/%2F") == []


# -- across a restart (the bundled broker alone: RabbitMQ keeps them too, in its database) -


def test_policies_and_limits_survive_a_restart_of_the_bundled_broker(tmp_path: Path) -> None:
    body = {"pattern": "^kept", "definition": {"max-length": 2}, "priority": 1}
    with Broker(data_dir=str(tmp_path)) as b:
        api = Api(b.management_url)
        api.ok("PUT", "/api/queues/%2F/kept-q", {"durable": True})
        api.ok("PUT", "/api/policies/%2F/kept", body)
        api.ok("PUT", "/api/operator-policies/%2F/cap", {**body, "definition": {"max-length": 1}})
        api.ok("PUT", "/api/vhost-limits/%2F/max-queues", {"value": 50})
        api.ok("PUT", "/api/policies/%2F/gone", {**body, "pattern": "^none"})
        api.ok("DELETE", "/api/policies/%2F/gone")
    with Broker(data_dir=str(tmp_path)) as b:
        api = Api(b.management_url)
        assert [p["name"] for p in api.get("/api/policies")] == ["kept"]
        assert api.get("/api/operator-policies/%2F/cap")["definition"] == {"max-length": 1}
        assert api.get("/api/vhost-limits/%2F") == [{"vhost": "/", "value": {"max-queues": 50}}]
        queue = api.get("/api/queues/%2F/kept-q")
        assert {k: queue[k] for k in POLICY_FIELDS} == applied("kept", "cap", {"max-length": 1})
