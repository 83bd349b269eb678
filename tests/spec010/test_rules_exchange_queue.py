"""The draft's MUST rules of the exchange and queue classes in the forms the draft gives them
(exchange.declare, exchange.delete, queue.bind and queue.unbind have no -ok; exchange.query
reports an exchange; alternate exchanges). The rules the draft keeps word for word from 0-9
run against both dialects in tests/spec09 (``dialects.in_both_dialects``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.spec09.flows import declare_queue, get_body
from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _publish(peer: Peer, exchange: str, routing_key: str, body: bytes, **properties: Any) -> None:
    peer.send_content(
        1, "basic.publish", body, properties, exchange=exchange, routing_key=routing_key
    )


def _query(peer: Peer, exchange: str) -> Any:
    return peer.call(1, "exchange.query", name=exchange)


@rule("exchange:required-types", "exchange:required-instances", "exchange:default-exchange")
def test_standard_exchanges_exist_and_the_default_routes_by_queue_name(
    peer: Peer, name: str
) -> None:
    for kind in ("direct", "fanout", "topic", "headers"):
        ok = _query(peer, f"amq.{kind}")
        assert (ok.not_found, ok.type) == (False, kind)
        peer.call(1, "exchange.declare", exchange=f"{name}-{kind}", type=kind)
        assert _query(peer, f"{name}-{kind}").type == kind
    assert _query(peer, "").type == "direct"
    declare_queue(peer, 1, name)
    _publish(peer, "", name, b"via default")
    assert get_body(peer, 1, name) == b"via default"


@rule("exchange:default-access")
@pytest.mark.parametrize(
    ("method", "fields", "closes"),
    [
        pytest.param(
            "exchange.declare",
            {"exchange": "", "type": "direct"},
            "channel",
            marks=rule("exchange.declare.exchange:exchange-name-required"),
            id="declare",
        ),
        pytest.param(
            "exchange.delete",
            {"exchange": ""},
            "channel",
            marks=rule("exchange.delete.exchange:exchange-name-required"),
            id="delete",
        ),
        pytest.param(
            "queue.bind",
            {"exchange": ""},
            "connection",  # queue.bind:failure
            marks=rule("queue.bind.exchange:exchange-name-required"),
            id="bind",
        ),
        pytest.param(
            "queue.unbind",
            {"exchange": ""},
            "connection",  # queue.unbind:failure
            marks=rule("queue.unbind.exchange:exchange-name-required"),
            id="unbind",
        ),
    ],
)
def test_the_default_exchange_is_named_only_by_publishing_to_the_empty_name(
    peer: Peer, name: str, method: str, fields: dict[str, str], closes: str
) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, "", name, b"by name")
    assert get_body(peer, 1, name) == b"by name"
    queue = {"queue": name, "routing_key": name} if method.startswith("queue.") else {}
    peer.send(1, method, **queue, **fields)
    assert peer.error(1) == (closes, 403)


@rule("exchange.declare.exchange:reserved-names")
def test_declaring_an_amq_exchange_is_refused(peer: Peer) -> None:
    peer.send(1, "exchange.declare", exchange="amq.mine-010", type="direct")
    assert peer.error(1) == ("channel", 403)


@rule("exchange.declare.type:typed")
def test_redeclaring_an_exchange_with_another_type_is_refused(peer: Peer, name: str) -> None:
    peer.call(1, "exchange.declare", exchange=name, type="direct")
    peer.send(1, "exchange.declare", exchange=name, type="fanout")
    assert peer.error(1) == ("channel", 406)


@rule("exchange.declare.type:support")
def test_an_unknown_exchange_type_is_refused(peer: Peer, name: str) -> None:
    peer.send(1, "exchange.declare", exchange=name, type="no-such-type")
    assert peer.error(1) == ("connection", 503)


@rule("exchange.declare.passive:not-found")
def test_passive_declare_of_a_missing_exchange_is_404(peer: Peer, name: str) -> None:
    peer.send(1, "exchange.declare", exchange=name, type="direct", passive=True)
    assert peer.error(1) == ("channel", 404)


@rule("exchange.declare.durable:support", "exchange.declare.durable:sticky")
def test_exchanges_are_durable_or_transient_and_redeclaring_keeps_which(
    peer: Peer, name: str
) -> None:
    peer.call(1, "exchange.declare", exchange=f"{name}-d", type="direct", durable=True)
    peer.call(1, "exchange.declare", exchange=f"{name}-t", type="direct", durable=False)
    peer.call(1, "exchange.declare", exchange=f"{name}-d", type="direct", durable=False)
    peer.call(1, "exchange.declare", exchange=f"{name}-t", type="direct", durable=True)
    assert (_query(peer, f"{name}-d").durable, _query(peer, f"{name}-t").durable) == (True, False)
    queue = declare_queue(peer, 1, f"{name}-q", durable=True)
    peer.call(1, "queue.bind", queue=queue, exchange=f"{name}-d", routing_key="k")


@rule("exchange.declare.alternate-exchange:empty-name")
def test_without_an_alternate_exchange_an_unroutable_message_is_dropped_silently(
    peer: Peer, name: str
) -> None:
    peer.call(1, "exchange.declare", exchange=name, type="direct")
    declare_queue(peer, 1, name)
    peer.call(1, "queue.bind", queue=name, exchange=name, routing_key="k")
    _publish(peer, name, "nowhere", b"dropped")
    _publish(peer, name, "k", b"routed")
    assert get_body(peer, 1, name) == b"routed"
    assert peer.message_count(name) == 0
    peer.nothing(1, "basic.reject", "channel.close")


@rule("exchange.declare.alternate-exchange:pre-existing-exchange")
def test_redeclaring_an_exchange_with_another_alternate_exchange_is_a_channel_error(
    peer: Peer, name: str
) -> None:
    peer.call(1, "exchange.declare", exchange=f"{name}-ae1", type="fanout")
    peer.call(1, "exchange.declare", exchange=f"{name}-ae2", type="fanout")
    declare = {"exchange": name, "type": "direct"}
    peer.call(1, "exchange.declare", alternate_exchange=f"{name}-ae1", **declare)
    peer.call(1, "exchange.declare", alternate_exchange=f"{name}-ae1", **declare)
    peer.call(1, "exchange.declare", **declare)  # none named: the exchange keeps its own
    assert _query(peer, name).arguments == {"alternate-exchange": f"{name}-ae1"}
    peer.send(1, "exchange.declare", alternate_exchange=f"{name}-ae2", **declare)
    assert peer.error(1) == ("channel", 406)


@rule("exchange.declare.alternate-exchange:double-failure")
def test_a_message_the_alternate_exchange_cannot_route_is_not_passed_on_again(
    peer: Peer, name: str
) -> None:
    first, second = f"{name}-ae1", f"{name}-ae2"
    peer.call(1, "exchange.declare", exchange=second, type="fanout")
    peer.call(1, "exchange.declare", exchange=first, type="direct", alternate_exchange=second)
    peer.call(1, "exchange.declare", exchange=name, type="direct", alternate_exchange=first)
    for queue, exchange, key in ((f"{name}-q1", first, "k1"), (f"{name}-q2", second, "")):
        declare_queue(peer, 1, queue)
        peer.call(1, "queue.bind", queue=queue, exchange=exchange, routing_key=key)
    _publish(peer, name, "k1", b"to the first")
    _publish(peer, name, "k2", b"dropped")
    _publish(peer, first, "k2", b"to the second")  # published to it, not routed to it
    assert get_body(peer, 1, f"{name}-q1") == b"to the first"
    assert get_body(peer, 1, f"{name}-q2") == b"to the second"
    assert peer.message_count(f"{name}-q1") + peer.message_count(f"{name}-q2") == 0


@rule("queue.declare:default-binding", "queue.declare.queue:default-name")
def test_a_server_named_queue_is_bound_to_the_default_exchange(peer: Peer) -> None:
    queue = declare_queue(peer, 1, "")
    assert queue.startswith("amq.gen-")
    _publish(peer, "", queue, b"x")
    assert get_body(peer, 1, queue) == b"x"


@rule("queue.declare.durable:types")
def test_a_transient_queue_binds_to_a_transient_exchange_and_a_durable_one_does_not(
    peer: Peer, name: str
) -> None:
    """What tells the two kinds apart on the wire: rule queue.bind:transient-exchange."""
    peer.call(1, "exchange.declare", exchange=name, type="fanout")
    transient = declare_queue(peer, 1, "")
    durable = declare_queue(peer, 1, "", durable=True)
    peer.call(1, "queue.bind", queue=transient, exchange=name)
    peer.send(1, "queue.bind", queue=durable, exchange=name)
    assert peer.error(1) == ("connection", 530)


@rule("queue.declare.exclusive:types")
def test_a_shared_queue_is_open_to_other_connections_and_an_exclusive_one_is_not(
    peer_factory: Callable[..., Peer], peer: Peer
) -> None:
    shared = declare_queue(peer, 1, "")
    exclusive = declare_queue(peer, 1, "", exclusive=True)
    other = peer_factory()
    other.open_channel(1)
    assert other.call(1, "queue.declare", queue=shared, passive=True).queue == shared
    other.send(1, "queue.declare", queue=exclusive, passive=True)
    assert other.error(1) == ("channel", 405)


@rule("queue.declare.exclusive:in-use")
@pytest.mark.parametrize(
    ("method", "fields"),
    [
        ("queue.declare", {}),
        ("queue.bind", {"exchange": "amq.direct", "routing_key": "k"}),
        ("basic.consume", {}),
        ("basic.get", {}),
    ],
)
def test_another_connections_exclusive_queue_is_refused_with_a_channel_exception(
    peer_factory: Callable[..., Peer], peer: Peer, method: str, fields: dict[str, str]
) -> None:
    exclusive = declare_queue(peer, 1, "", exclusive=True)
    other = peer_factory()
    other.open_channel(1)
    other.send(1, method, queue=exclusive, **fields)
    assert other.error(1) == ("channel", 405)


def _reject_one(peer: Peer, queue: str, body: bytes) -> None:
    """Publish ``body`` to ``queue``, get it and reject it without requeueing it."""
    _publish(peer, "", queue, body)
    peer.send(1, "basic.get", queue=queue)
    tag = peer.expect(1, "basic.get-ok").method.delivery_tag
    peer.send(1, "basic.reject", delivery_tag=tag, requeue=False)


@rule("queue.declare.alternate-exchange:empty")
def test_a_message_rejected_from_a_queue_without_an_alternate_exchange_is_dropped(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    _reject_one(peer, name, b"rejected")
    assert peer.message_count(name) == 0
    peer.nothing(1, "channel.close")


def test_a_message_rejected_from_a_queue_goes_to_its_alternate_exchange(
    peer: Peer, name: str
) -> None:
    alternate = f"{name}-ae"
    peer.call(1, "exchange.declare", exchange=alternate, type="fanout")
    declare_queue(peer, 1, alternate)
    peer.call(1, "queue.bind", queue=alternate, exchange=alternate)
    declare_queue(peer, 1, name, alternate_exchange=alternate)
    _reject_one(peer, name, b"rejected")
    assert get_body(peer, 1, alternate) == b"rejected"


@rule("queue.declare.alternate-exchange:pre-existing-exchange")
def test_redeclaring_a_queue_with_another_alternate_exchange_is_a_channel_error(
    peer: Peer, name: str
) -> None:
    for alternate in (f"{name}-ae1", f"{name}-ae2"):
        peer.call(1, "exchange.declare", exchange=alternate, type="fanout")
    declare_queue(peer, 1, name, alternate_exchange=f"{name}-ae1")
    declare_queue(peer, 1, name, alternate_exchange=f"{name}-ae1")
    peer.send(1, "queue.declare", queue=name, alternate_exchange=f"{name}-ae2")
    assert peer.error(1) == ("channel", 406)


@rule("queue.declare.alternate-exchange:delete-exchange")
def test_a_queues_alternate_exchange_cannot_be_deleted_while_the_queue_exists(
    peer: Peer, name: str
) -> None:
    alternate = f"{name}-ae"
    peer.call(1, "exchange.declare", exchange=alternate, type="fanout")
    declare_queue(peer, 1, name, alternate_exchange=alternate)
    peer.send(1, "exchange.delete", exchange=alternate)
    assert peer.error(1) == ("channel", 406)
    peer.open_channel(2)
    peer.call(2, "queue.delete", queue=name)
    peer.call(2, "exchange.delete", exchange=alternate)
    peer.send(2, "exchange.declare", exchange=alternate, type="fanout", passive=True)
    assert peer.error(2) == ("channel", 404)


@rule("exchange:default-access")
def test_the_default_exchange_is_refused_403_even_when_a_queue_names_it_its_alternate(
    peer: Peer, name: str
) -> None:
    # A 0-9-1 client's queue with x-dead-letter-exchange "" (common) is, to the draft, a queue
    # whose alternate exchange is the default one: deleting "" is still 403, not 406.
    declare_queue(peer, 1, name, arguments={"x-dead-letter-exchange": ""})
    peer.send(1, "exchange.delete", exchange="")
    assert peer.error(1) == ("channel", 403)


@rule("queue.bind:duplicates")
def test_a_duplicate_binding_is_not_an_error_and_routes_once(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    for _ in range(2):
        peer.call(1, "queue.bind", queue=name, exchange="amq.direct", routing_key=name)
    _publish(peer, "amq.direct", name, b"once")
    assert get_body(peer, 1, name) == b"once"
    assert peer.message_count(name) == 0


@rule("queue.bind.queue:queue-existence")
def test_binding_a_missing_queue_is_refused(peer: Peer, name: str) -> None:
    peer.send(1, "queue.bind", queue=name, exchange="amq.direct", routing_key="k")
    assert peer.error(1) == ("connection", 404)


@rule("queue.bind.exchange:exchange-existence")
def test_binding_to_a_missing_exchange_is_refused(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.send(1, "queue.bind", queue=name, exchange=f"{name}-missing", routing_key="k")
    assert peer.error(1) == ("connection", 404)


@rule("queue.bind.routing-key:direct-exchange-key-matching")
def test_a_direct_binding_routes_equal_keys(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "queue.bind", queue=name, exchange="amq.direct", routing_key="key-010")
    _publish(peer, "amq.direct", "key-010", b"match")
    _publish(peer, "amq.direct", "other", b"no")
    assert get_body(peer, 1, name) == b"match"
    assert peer.message_count(name) == 0


@rule("queue.unbind.queue:non-existent-queue")
def test_unbinding_a_missing_queue_is_404(peer: Peer, name: str) -> None:
    """404, closing the connection: rule queue.unbind:failure."""
    peer.send(1, "queue.unbind", queue=name, exchange="amq.direct", routing_key="k")
    assert peer.error(1) == ("connection", 404)


@rule("queue.unbind.exchange:non-existent-exchange")
def test_unbinding_from_a_missing_exchange_is_404(peer: Peer, name: str) -> None:
    """404, closing the connection: rule queue.unbind:failure."""
    declare_queue(peer, 1, name)
    peer.send(1, "queue.unbind", queue=name, exchange=f"{name}-missing", routing_key="k")
    assert peer.error(1) == ("connection", 404)


@rule("queue.purge:empty")
def test_purge_empties_the_queue(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    for _ in range(3):
        _publish(peer, "", name, b"x")
    assert peer.call(1, "queue.purge", queue=name).message_count == 3
    assert peer.call(1, "basic.get", queue=name).NAME == "basic.get-empty"


@rule("queue.purge.queue:queue-exists")
def test_purging_a_missing_queue_is_a_404_channel_exception(peer: Peer, name: str) -> None:
    peer.send(1, "queue.purge", queue=name)
    assert peer.error(1) == ("channel", 404)


@rule("queue.delete.if-unused:if-unused-flag")
def test_delete_if_unused_of_a_consumed_queue_is_406(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name)
    peer.send(1, "queue.delete", queue=name, if_unused=True)
    assert peer.error(1) == ("channel", 406)


@rule("queue.delete.if-empty:not-empty")
def test_delete_if_empty_of_a_non_empty_queue_is_406(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, "", name, b"x")
    assert peer.message_count(name) == 1
    peer.send(1, "queue.delete", queue=name, if_empty=True)
    assert peer.error(1) == ("channel", 406)
