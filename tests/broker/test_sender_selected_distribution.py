"""Sender-selected distribution (RabbitMQ's extension): the ``CC`` and ``BCC`` headers of a
published message add routing keys. Each test runs on the bundled broker and on RabbitMQ."""

from __future__ import annotations

from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker, UnroutableError

from .helpers import get_all


def _queue(channel: BlockingChannel, exchange: str, *keys: str, **arguments: Any) -> str:
    """A new exclusive queue bound to ``exchange`` by each key (and ``arguments``)."""
    q = channel.queue_declare("", exclusive=True).method.queue
    for key in keys:
        channel.queue_bind(q, exchange, key, arguments=arguments or None)
    return q


def _publish(
    channel: BlockingChannel,
    exchange: str,
    key: str,
    headers: dict[str, Any],
    body: bytes = b"m",
    mandatory: bool = False,
) -> None:
    channel.basic_publish(
        exchange, key, body, pika.BasicProperties(headers=headers), mandatory=mandatory
    )


def _received(channel: BlockingChannel, *queues: str) -> list[list[bytes]]:
    return [get_all(channel, q) for q in queues]


@pytest.fixture
def confirmed(channel: BlockingChannel) -> BlockingChannel:
    """A channel with publisher confirms: a publish has been routed when it returns."""
    channel.confirm_delivery()
    return channel


def test_cc_and_bcc_keys_route_on_a_direct_exchange(confirmed: BlockingChannel) -> None:
    qs = [_queue(confirmed, "amq.direct", key) for key in ("ssd-k1", "ssd-k2", "ssd-k3", "x")]
    _publish(confirmed, "amq.direct", "ssd-k1", {"CC": ["ssd-k2"], "BCC": ["ssd-k3"]})
    assert _received(confirmed, *qs) == [[b"m"], [b"m"], [b"m"], []]


def test_a_queue_reached_by_several_keys_gets_the_message_once(
    confirmed: BlockingChannel,
) -> None:
    q = _queue(confirmed, "amq.direct", "ssd-a", "ssd-b")
    _publish(confirmed, "amq.direct", "ssd-a", {"CC": ["ssd-b", "ssd-a"], "BCC": ["ssd-b"]})
    assert get_all(confirmed, q) == [b"m"]


def test_bcc_header_is_removed_and_cc_header_kept(confirmed: BlockingChannel) -> None:
    q = _queue(confirmed, "amq.direct", "ssd-cc")
    _publish(confirmed, "amq.direct", "ssd-key", {"CC": ["ssd-cc"], "BCC": ["x"], "n": 1})
    method, properties, _ = confirmed.basic_get(q, auto_ack=True)
    assert method.routing_key == "ssd-key"  # the published key, not the one that routed
    assert properties.headers == {"CC": ["ssd-cc"], "n": 1}


def test_removing_the_only_header_leaves_an_empty_headers_table(
    confirmed: BlockingChannel,
) -> None:
    q = _queue(confirmed, "amq.direct", "ssd-bcc")
    _publish(confirmed, "amq.direct", "none", {"BCC": ["ssd-bcc"]})
    _, properties, _ = confirmed.basic_get(q, auto_ack=True)
    assert properties.headers == {}


def test_topic_exchange_matches_each_key_against_its_bindings(
    confirmed: BlockingChannel, name: str
) -> None:
    confirmed.exchange_declare(name, "topic", auto_delete=True)
    star, hash_ = _queue(confirmed, name, "a.*"), _queue(confirmed, name, "#.z")
    _publish(confirmed, name, "no.match", {"CC": ["a.b"], "BCC": ["y.z"]})
    assert _received(confirmed, star, hash_) == [[b"m"], [b"m"]]


def test_default_exchange_routes_cc_and_bcc_keys_to_the_queues_they_name(
    confirmed: BlockingChannel,
) -> None:
    q1, q2, q3 = (confirmed.queue_declare("", exclusive=True).method.queue for _ in range(3))
    _publish(confirmed, "", q1, {"CC": [q2], "BCC": [q3]})
    assert _received(confirmed, q1, q2, q3) == [[b"m"], [b"m"], [b"m"]]


def test_fanout_exchange_delivers_once_and_removes_bcc(
    confirmed: BlockingChannel, name: str
) -> None:
    confirmed.exchange_declare(name, "fanout", auto_delete=True)
    q = _queue(confirmed, name, "")
    _publish(confirmed, name, "k", {"CC": ["a", "b"], "BCC": ["c"]})
    method, properties, _ = confirmed.basic_get(q, auto_ack=True)
    assert properties.headers == {"CC": ["a", "b"]}
    assert confirmed.basic_get(q, auto_ack=True)[0] is None


def test_headers_exchange_sees_cc_but_not_bcc(confirmed: BlockingChannel, name: str) -> None:
    confirmed.exchange_declare(name, "headers", auto_delete=True)
    on_bcc = _queue(confirmed, name, "", **{"x-match": "any", "BCC": ["b"]})
    on_cc = _queue(confirmed, name, "", **{"x-match": "any", "CC": ["c"]})
    _publish(confirmed, name, "", {"CC": ["c"], "BCC": ["b"]})
    assert _received(confirmed, on_bcc, on_cc) == [[], [b"m"]]


def test_mandatory_message_routed_by_a_cc_key_is_not_returned(
    confirmed: BlockingChannel,
) -> None:
    q = _queue(confirmed, "amq.direct", "ssd-mandatory")
    _publish(confirmed, "amq.direct", "nowhere", {"BCC": ["ssd-mandatory"]}, mandatory=True)
    assert get_all(confirmed, q) == [b"m"]


def test_mandatory_message_no_key_routes_is_returned_without_bcc(
    confirmed: BlockingChannel,
) -> None:
    with pytest.raises(UnroutableError) as e:
        headers = {"CC": ["y"], "BCC": ["z"]}
        _publish(confirmed, "amq.direct", "ssd-nowhere", headers, mandatory=True)
    returned = e.value.messages[0]
    assert (returned.method.reply_code, returned.method.reply_text) == (312, "NO_ROUTE")
    assert returned.method.routing_key == "ssd-nowhere"
    assert returned.properties.headers == {"CC": ["y"]}


def test_alternate_exchange_is_not_used_when_a_cc_key_routes(
    confirmed: BlockingChannel, name: str
) -> None:
    confirmed.exchange_declare(name + "-ae", "fanout", auto_delete=True)
    confirmed.exchange_declare(
        name, "direct", auto_delete=True, arguments={"alternate-exchange": name + "-ae"}
    )
    routed, alternate = _queue(confirmed, name, "k"), _queue(confirmed, name + "-ae", "")
    _publish(confirmed, name, "nope", {"CC": ["k"]})
    assert _received(confirmed, routed, alternate) == [[b"m"], []]


def test_every_key_routes_through_exchange_to_exchange_bindings(
    confirmed: BlockingChannel, name: str
) -> None:
    confirmed.exchange_declare(name + "-src", "direct", auto_delete=True)
    confirmed.exchange_declare(name, "direct", auto_delete=True)
    confirmed.exchange_bind(name, name + "-src", "hop")
    q = _queue(confirmed, name, "end")
    _publish(confirmed, name + "-src", "start", {"BCC": ["hop"], "CC": ["end"]})
    assert get_all(confirmed, q) == [b"m"]


def test_entries_that_are_not_strings_add_no_key(confirmed: BlockingChannel) -> None:
    q = _queue(confirmed, "amq.direct", "ssd-bytes")
    # pika sends bytes as a byte array (field type 'x'), not a long string
    _publish(confirmed, "amq.direct", "none", {"CC": [1, b"ssd-bytes"]})
    assert get_all(confirmed, q) == []


def test_cc_keys_route_when_a_transaction_commits(channel: BlockingChannel) -> None:
    q = _queue(channel, "amq.direct", "ssd-tx")
    channel.tx_select()
    _publish(channel, "amq.direct", "none", {"CC": ["ssd-tx"]})
    channel.tx_commit()
    assert get_all(channel, q) == [b"m"]


@pytest.mark.parametrize(
    ("headers", "type_name"),
    [
        ({"CC": "k"}, '"CC",longstr'),
        ({"BCC": 5}, '"BCC",signedint'),
        ({"CC": 1 << 40}, '"CC",long'),
        ({"CC": True}, '"CC",bool'),
        ({"BCC": {"k": 1}}, '"BCC",table'),
    ],
)
def test_cc_or_bcc_that_is_not_an_array_closes_the_channel_with_406(
    channel: BlockingChannel, headers: dict[str, Any], type_name: str
) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        _publish(channel, "amq.direct", "k", headers)
        channel.basic_qos(prefetch_count=1)  # a round trip: the refusal arrives first
    assert e.value.reply_code == 406
    assert e.value.reply_text == (
        f"PRECONDITION_FAILED - invalid message: {{unacceptable_type_in_header,{type_name}}}"
    )
