"""Topic authorisation (RabbitMQ 4.0's): per user, vhost and topic exchange, a ``write``
expression checked against the routing key and the CC and BCC keys of a publish and a
``read`` expression against the binding key of queue.bind, exchange.bind and their unbinds;
refused with 403 on the channel. Each test runs on the bundled broker and on RabbitMQ 4.0
(set with ``rabbitmqctl``); the
persistence tests on the bundled broker's data directory."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker

from broker import Broker
from broker.config import BrokerConfig
from testbed.rabbitmq import rabbitmqctl

USER, PASSWORD = "tp.user", "pw"
ORDERS, EMPTY, MISSING, INTERNAL = "tp-orders", "tp-empty", "tp-missing", "tp-internal"
#: exchange -> (write, read) of USER in vhost "/"
TOPIC_PERMISSIONS = {
    ORDERS: (r"^order\.", r"^order\.(paid|new)$"),
    EMPTY: ("", ""),
    "amq.topic": ("^{username}$", "^{vhost}$"),
    "amq.direct": ("^$", "^$"),  # not a topic exchange: not checked
    MISSING: ("^$", "^$"),
    INTERNAL: ("^$", "^$"),
}
ALL = {"configure": ".*", "write": ".*", "read": ".*"}


def _bundled_config() -> dict[str, object]:
    topics = {x: {"write": w, "read": r} for x, (w, r) in TOPIC_PERMISSIONS.items()}
    return {
        "users": {
            "guest": {"password": "guest", "permissions": {"/": ALL}},
            USER: {
                "password": PASSWORD,
                "permissions": {"/": ALL},
                "topic_permissions": {"/": topics},
            },
        }
    }


def _add_rabbitmq_user(url: str) -> None:
    rabbitmqctl(url, "add_user", USER, PASSWORD)
    rabbitmqctl(url, "set_permissions", USER, ".*", ".*", ".*")
    for exchange, (write, read) in TOPIC_PERMISSIONS.items():
        rabbitmqctl(url, "set_topic_permissions", USER, exchange, write, read)


@pytest.fixture(
    scope="module",
    params=[pytest.param("bundled"), pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)],
)
def guest_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The guest URL of a broker where USER has TOPIC_PERMISSIONS, and the exchanges."""
    if request.param == "bundled":
        with Broker(config=_bundled_config()) as b:
            yield from _with_exchanges(b.url)
    else:
        url: str = request.getfixturevalue("rabbitmq_url")
        _add_rabbitmq_user(url)
        try:
            yield from _with_exchanges(url)
        finally:
            rabbitmqctl(url, "delete_user", USER)


def _with_exchanges(url: str) -> Iterator[str]:
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        ch = conn.channel()
        for exchange in (ORDERS, EMPTY, "tp-free"):
            ch.exchange_declare(exchange, "topic")
        ch.exchange_declare(INTERNAL, "topic", internal=True)
        yield url
        for exchange in (ORDERS, EMPTY, "tp-free", INTERNAL):
            ch.exchange_delete(exchange)


@pytest.fixture
def admin(guest_url: str) -> Iterator[BlockingChannel]:
    with pika.BlockingConnection(pika.URLParameters(guest_url)) as conn:
        yield conn.channel()


@pytest.fixture
def user(guest_url: str) -> Iterator[Callable[[], BlockingChannel]]:
    """Opens channels of USER on one connection."""
    params = pika.URLParameters(guest_url)
    params.credentials = pika.PlainCredentials(USER, PASSWORD)
    with pika.BlockingConnection(params) as conn:
        yield conn.channel


@pytest.fixture
def queue(admin: BlockingChannel) -> Iterator[str]:
    name = f"tp-{uuid.uuid4().hex[:8]}"
    admin.queue_declare(name)
    yield name
    admin.queue_delete(name)


def _refusal(operation: Callable[[], object], channel: BlockingChannel) -> str | None:
    """The reply text if the broker closes ``channel`` with 403 for ``operation``."""
    try:
        operation()
        channel.basic_qos(prefetch_count=1)  # a round trip: a refusal arrives before it
    except ChannelClosedByBroker as e:
        assert e.reply_code == 403
        return e.reply_text
    return None


def _refused_text(key: str, exchange: str, access: str) -> str:
    """RabbitMQ 4.0's text, which names the ``access`` ("write", "read") refused (3.10's
    said "access to topic")."""
    return (
        f"ACCESS_REFUSED - {access} access to topic '{key}' in exchange '{exchange}' in "
        f"vhost '/' refused for user '{USER}'"
    )


def _publish(ch: BlockingChannel, exchange: str, key: str, **headers: object) -> str | None:
    properties = pika.BasicProperties(headers=headers or None)
    return _refusal(lambda: ch.basic_publish(exchange, key, b"m", properties), ch)


def _bind(ch: BlockingChannel, queue: str, exchange: str, key: str) -> str | None:
    return _refusal(lambda: ch.queue_bind(queue, exchange, key), ch)


def _count(admin: BlockingChannel, queue: str) -> int:
    return admin.queue_declare(queue, passive=True).method.message_count


def test_publish_with_a_routing_key_the_write_expression_matches_is_routed(
    admin: BlockingChannel, user: Callable[[], BlockingChannel], queue: str
) -> None:
    admin.queue_bind(queue, ORDERS, "order.*")
    assert _publish(user(), ORDERS, "order.paid") is None
    assert _count(admin, queue) == 1


def test_publish_with_another_routing_key_is_refused_with_rabbitmq_text(
    user: Callable[[], BlockingChannel],
) -> None:
    assert _publish(user(), ORDERS, "invoice.paid") == _refused_text(
        "invoice.paid", ORDERS, "write"
    )


def test_cc_and_bcc_keys_need_write_as_the_routing_key_does(
    admin: BlockingChannel, user: Callable[[], BlockingChannel], queue: str
) -> None:
    """RabbitMQ 4.0 checks the routing key, then the CC keys, then the BCC keys (3.10 checked
    the routing key alone)."""
    admin.queue_bind(queue, ORDERS, "order.#")
    assert _publish(user(), ORDERS, "order.x", CC=["order.y"], BCC=["order.z"]) is None
    assert _count(admin, queue) == 1
    refused = _refused_text("invoice.a", ORDERS, "write")
    assert _publish(user(), ORDERS, "order.x", CC=["order.y", "invoice.a"]) == refused
    refused = _refused_text("invoice.b", ORDERS, "write")
    assert _publish(user(), ORDERS, "order.x", CC=["order.y"], BCC=["invoice.b"]) == refused
    refused = _refused_text("invoice.x", ORDERS, "write")
    assert _publish(user(), ORDERS, "invoice.x", CC=["invoice.a"]) == refused


def test_queue_bind_and_unbind_need_read_on_the_binding_key(
    user: Callable[[], BlockingChannel], queue: str
) -> None:
    assert _bind(user(), queue, ORDERS, "order.paid") is None
    assert _bind(user(), queue, ORDERS, "order.#") == _refused_text("order.#", ORDERS, "read")
    ch = user()
    assert _refusal(lambda: ch.queue_unbind(queue, ORDERS, "order.*"), ch) == _refused_text(
        "order.*", ORDERS, "read"
    )


def test_exchange_bind_needs_read_when_the_source_is_the_topic_exchange(
    user: Callable[[], BlockingChannel],
) -> None:
    ch = user()
    refusal = _refusal(lambda: ch.exchange_bind("amq.fanout", ORDERS, "x"), ch)
    assert refusal == _refused_text("x", ORDERS, "read")
    ch = user()
    assert _refusal(lambda: ch.exchange_bind(ORDERS, "amq.fanout", "x"), ch) is None
    ch.exchange_unbind(ORDERS, "amq.fanout", "x")


def test_an_empty_expression_permits_only_the_empty_key(
    user: Callable[[], BlockingChannel], queue: str
) -> None:
    assert _publish(user(), EMPTY, "") is None
    assert _publish(user(), EMPTY, "a") == _refused_text("a", EMPTY, "write")
    assert _bind(user(), queue, EMPTY, "") is None
    assert _bind(user(), queue, EMPTY, "a") == _refused_text("a", EMPTY, "read")


def test_username_and_vhost_variables_are_replaced_unescaped(
    user: Callable[[], BlockingChannel], queue: str
) -> None:
    assert _publish(user(), "amq.topic", USER) is None
    assert _publish(user(), "amq.topic", USER.replace(".", "x")) is None  # '.' stays a regex
    assert _publish(user(), "amq.topic", "other") == _refused_text("other", "amq.topic", "write")
    assert _bind(user(), queue, "amq.topic", "/") is None
    assert _bind(user(), queue, "amq.topic", "x") == _refused_text("x", "amq.topic", "read")


def test_exchanges_without_topic_permissions_and_other_types_are_unrestricted(
    user: Callable[[], BlockingChannel], queue: str
) -> None:
    assert _publish(user(), "tp-free", "any.key") is None
    assert _publish(user(), "amq.direct", "any.key") is None
    assert _bind(user(), queue, "amq.direct", "any.key") is None


def test_binding_to_a_missing_exchange_is_404_not_403(
    user: Callable[[], BlockingChannel], queue: str
) -> None:
    ch = user()
    with pytest.raises(ChannelClosedByBroker) as e:
        ch.queue_bind(queue, MISSING, "a")
    assert e.value.reply_code == 404


def test_publishing_to_an_internal_exchange_is_refused_for_that_first(
    user: Callable[[], BlockingChannel],
) -> None:
    assert _publish(user(), INTERNAL, "a") == (
        f"ACCESS_REFUSED - cannot publish to internal exchange '{INTERNAL}' in vhost '/'"
    )


def test_a_refusal_closes_the_channel_not_the_connection(
    user: Callable[[], BlockingChannel],
) -> None:
    ch = user()
    assert _publish(ch, ORDERS, "nope") is not None
    assert not ch.is_open
    assert _publish(user(), ORDERS, "order.ok") is None


# -- configuration and persistence (the bundled broker) ---------------------------------------


def _user_config(topics: dict[str, dict[str, str]] | None) -> dict[str, object]:
    spec: dict[str, object] = {"password": PASSWORD, "permissions": {"/": ALL}}
    if topics is not None:
        spec["topic_permissions"] = {"/": topics}
    return {"users": {"guest": {"password": "guest"}, USER: spec}}


def _publish_as_user(broker: Broker, key: str) -> str | None:
    params = pika.URLParameters(broker.url)
    params.credentials = pika.PlainCredentials(USER, PASSWORD)
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        ch.exchange_declare(ORDERS, "topic", durable=True)
        return _publish(ch, ORDERS, key)


def test_topic_permissions_survive_a_restart(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    config = _user_config({ORDERS: {"write": "^order\\.", "read": ".*"}})
    with Broker(config=config, data_dir=data) as broker:
        assert _publish_as_user(broker, "invoice.x") is not None
    with Broker(data_dir=data) as broker:  # the user comes from the data directory
        assert _publish_as_user(broker, "order.x") is None
        assert _publish_as_user(broker, "invoice.x") == _refused_text("invoice.x", ORDERS, "write")


def test_the_configuration_replaces_the_stored_topic_permissions_of_its_users(
    tmp_path: Path,
) -> None:
    data = str(tmp_path / "data")
    config = _user_config({ORDERS: {"write": "^order\\.", "read": ".*"}})
    with Broker(config=config, data_dir=data):
        pass
    with Broker(config=_user_config(None), data_dir=data) as broker:
        assert _publish_as_user(broker, "invoice.x") is None
    with Broker(data_dir=data) as broker:
        assert _publish_as_user(broker, "invoice.x") is None


def test_an_invalid_topic_expression_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="topic permission write"):
        BrokerConfig.from_dict(_user_config({ORDERS: {"write": "(", "read": ".*"}}))
