"""Access control as RabbitMQ does it: each method needs configure, write or read permission
on the resources it names (regular expressions per user and vhost), refused with 403 on the
channel; a user cannot reach a vhost it has no permissions in; failed logins are delayed,
closed with 403 and logged."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import (
    ChannelClosedByBroker,
    ProbableAccessDeniedError,
    ProbableAuthenticationError,
)

from broker import Broker
from broker.server.admission import authenticate

ALL = {"configure": ".*", "write": ".*", "read": ".*"}
AUTH_FAILURE_DELAY = 0.4


def _user(permissions: dict[str, dict[str, str]]) -> dict[str, object]:
    return {"password": "pw", "permissions": permissions}


USERS = {
    "guest": _user({"/": ALL, "staging": ALL}),
    # Every permission, but only on names starting "perm-".
    "limited": _user({"/": {"configure": "^perm-", "write": "^perm-", "read": "^perm-"}}),
    "no-configure": _user({"/": {**ALL, "configure": ""}}),
    "no-write": _user({"/": {**ALL, "write": ""}}),
    "no-read": _user({"/": {**ALL, "read": ""}}),
    "staging-only": _user({"staging": ALL}),
}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {
        "vhosts": ["/", "staging"],
        "users": USERS,
        "auth_failure_delay": AUTH_FAILURE_DELAY,
    }
    with Broker(config=config) as b:
        yield b


def _params(broker: Broker, user: str, vhost: str = "/") -> pika.ConnectionParameters:
    password = "pw"
    return pika.ConnectionParameters(
        "127.0.0.1", broker.port, vhost, pika.PlainCredentials(user, password)
    )


@pytest.fixture
def as_user(broker: Broker) -> Iterator[Callable[[str], BlockingChannel]]:
    """Opens a channel as a user (closed after the test)."""
    opened: list[pika.BlockingConnection] = []

    def open_channel(user: str) -> BlockingChannel:
        conn = pika.BlockingConnection(_params(broker, user))
        opened.append(conn)
        return conn.channel()

    yield open_channel
    for conn in opened:
        if conn.is_open:
            conn.close()


@dataclass(frozen=True)
class Resources:
    """A queue "<prefix>q", an exchange "<prefix>x" and a second exchange "<prefix>y",
    declared by an administrator, for one test."""

    prefix: str

    @property
    def queue(self) -> str:
        return self.prefix + "q"

    @property
    def exchange(self) -> str:
        return self.prefix + "x"

    @property
    def exchange2(self) -> str:
        return self.prefix + "y"


def _make(broker: Broker, prefix: str) -> Resources:
    r = Resources(f"{prefix}{uuid.uuid4().hex[:8]}-")
    conn = pika.BlockingConnection(_params(broker, "guest"))
    ch = conn.channel()
    ch.queue_declare(r.queue)
    ch.exchange_declare(r.exchange, "direct")
    ch.exchange_declare(r.exchange2, "direct")
    conn.close()
    return r


def _publish(ch: BlockingChannel, r: Resources) -> None:
    ch.basic_publish(r.exchange, "k", b"x")
    ch.basic_qos(prefetch_count=1)  # a synchronous round trip: a refusal arrives before it


#: Each operation and the permissions it needs ("kind" of the resources it names).
OPERATIONS: dict[str, tuple[set[str], Callable[[BlockingChannel, Resources], object]]] = {
    "exchange.declare": (
        {"configure"},
        lambda ch, r: ch.exchange_declare(r.prefix + "new", "fanout"),
    ),
    "exchange.delete": ({"configure"}, lambda ch, r: ch.exchange_delete(r.exchange)),
    "queue.declare": ({"configure"}, lambda ch, r: ch.queue_declare(r.prefix + "new")),
    "queue.delete": ({"configure"}, lambda ch, r: ch.queue_delete(r.queue)),
    "queue.bind": ({"write", "read"}, lambda ch, r: ch.queue_bind(r.queue, r.exchange, "k")),
    "queue.unbind": ({"write", "read"}, lambda ch, r: ch.queue_unbind(r.queue, r.exchange, "k")),
    "exchange.bind": (
        {"write", "read"},
        lambda ch, r: ch.exchange_bind(r.exchange2, r.exchange, "k"),
    ),
    "basic.publish": ({"write"}, _publish),
    "basic.get": ({"read"}, lambda ch, r: ch.basic_get(r.queue)),
    "basic.consume": ({"read"}, lambda ch, r: ch.basic_consume(r.queue, lambda *a: None)),
    "queue.purge": ({"read"}, lambda ch, r: ch.queue_purge(r.queue)),
}


def _refused(operation: Callable[[], object]) -> ChannelClosedByBroker | None:
    try:
        operation()
    except ChannelClosedByBroker as e:
        return e
    return None


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_operation_is_allowed_on_resources_the_regex_matches(
    broker: Broker, as_user: Callable[[str], BlockingChannel], operation: str
) -> None:
    _, run = OPERATIONS[operation]
    r = _make(broker, "perm-")
    assert _refused(lambda: run(as_user("limited"), r)) is None


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_operation_is_refused_with_403_on_resources_the_regex_does_not_match(
    broker: Broker, as_user: Callable[[str], BlockingChannel], operation: str
) -> None:
    _, run = OPERATIONS[operation]
    r = _make(broker, "free-")
    refusal = _refused(lambda: run(as_user("limited"), r))
    assert refusal is not None and refusal.reply_code == 403
    assert "ACCESS_REFUSED" in refusal.reply_text and "user 'limited'" in refusal.reply_text


@pytest.mark.parametrize(
    ("operation", "kind"),
    [(op, kind) for op, (kinds, _) in OPERATIONS.items() for kind in sorted(kinds)],
)
def test_operation_needs_its_permission_kind(
    broker: Broker, as_user: Callable[[str], BlockingChannel], operation: str, kind: str
) -> None:
    _, run = OPERATIONS[operation]
    r = _make(broker, "any-")
    refusal = _refused(lambda: run(as_user(f"no-{kind}"), r))
    assert refusal is not None and refusal.reply_code == 403


@pytest.mark.parametrize("kind", ["configure", "write", "read"])
def test_operations_not_needing_a_kind_work_without_it(
    broker: Broker, as_user: Callable[[str], BlockingChannel], kind: str
) -> None:
    for operation, (kinds, run) in OPERATIONS.items():
        if kind not in kinds:
            r = _make(broker, "any-")
            assert _refused(lambda: run(as_user(f"no-{kind}"), r)) is None, operation  # noqa: B023


def test_default_exchange_is_named_amq_default_in_permissions(
    as_user: Callable[[str], BlockingChannel],
) -> None:
    ch = as_user("limited")
    refusal = _refused(lambda: (ch.basic_publish("", "perm-q", b"x"), ch.basic_qos()))
    assert refusal is not None and "exchange 'amq.default'" in refusal.reply_text


def test_server_named_queues_need_configure_on_amq_gen(
    as_user: Callable[[str], BlockingChannel],
) -> None:
    refusal = _refused(lambda: as_user("limited").queue_declare("", exclusive=True))
    assert refusal is not None and refusal.reply_code == 403
    assert _refused(lambda: as_user("no-read").queue_declare("", exclusive=True)) is None


def test_passive_declares_need_no_permission(
    broker: Broker, as_user: Callable[[str], BlockingChannel]
) -> None:
    r = _make(broker, "free-")
    ch = as_user("no-configure")
    assert _refused(lambda: ch.queue_declare(r.queue, passive=True)) is None
    assert _refused(lambda: ch.exchange_declare(r.exchange, passive=True)) is None


def test_user_cannot_open_a_vhost_it_has_no_permissions_in(broker: Broker) -> None:
    with pytest.raises(ProbableAccessDeniedError):
        pika.BlockingConnection(_params(broker, "limited", "staging"))
    with pytest.raises(ProbableAccessDeniedError):
        pika.BlockingConnection(_params(broker, "staging-only", "/"))


def test_a_vhost_s_resources_are_invisible_from_another(broker: Broker) -> None:
    staging = pika.BlockingConnection(_params(broker, "staging-only", "staging"))
    name = f"staging-{uuid.uuid4().hex[:8]}"
    staging.channel().queue_declare(name)
    root = pika.BlockingConnection(_params(broker, "guest", "/"))
    refusal = _refused(lambda: root.channel().queue_declare(name, passive=True))
    assert refusal is not None and refusal.reply_code == 404
    staging.close()
    root.close()


def test_failed_login_is_closed_with_403_after_the_delay_and_logged(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    params = pika.ConnectionParameters(
        "127.0.0.1", broker.port, "/", pika.PlainCredentials("limited", "guessed-pw-1")
    )
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, "broker"), pytest.raises(ProbableAuthenticationError):
        pika.BlockingConnection(params)
    assert time.monotonic() - began >= AUTH_FAILURE_DELAY
    assert any("login refused" in r.getMessage() for r in caplog.records)
    assert all("guessed-pw-1" not in r.getMessage() for r in caplog.records)  # never the password


@pytest.mark.parametrize(
    ("peer", "loopback_users", "allowed"),
    [
        ("127.0.0.1:5000", ["guest"], True),
        ("::1:5000", ["guest"], True),
        ("192.0.2.10:5000", ["guest"], False),
        ("192.0.2.10:5000", [], True),
    ],
)
def test_guest_logs_in_only_from_loopback_unless_configured(
    peer: str, loopback_users: list[str], allowed: bool
) -> None:
    """Only loopback addresses can be reached here, so the rule is checked on the login
    decision (``admission.authenticate``) given a remote peer address."""
    with Broker(config={"loopback_users": loopback_users}) as b:
        assert b._server is not None
        user, reason = authenticate(b._server.config, "PLAIN", b"\0guest\0guest", peer, None)
        assert (user is not None) is allowed, reason
