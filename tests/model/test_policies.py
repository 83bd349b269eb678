"""Policies in the model, in-process (no sockets): which policy applies to a queue or an
exchange, how it combines with an operator policy and with the queue's own ``x-`` arguments,
and how a virtual host re-applies them when they change. The rules are RabbitMQ 4.0.5's
(broker/model/policies.py names the sources); tests/management/test_policies.py checks the
same rules side by side with a RabbitMQ 4 node."""

from __future__ import annotations

from typing import Any

import pytest

from broker.model.memory import MemoryGauge
from broker.model.policies import (
    EXCHANGE,
    Policy,
    PolicyError,
    effective_arguments,
    merge_definitions,
    parse_policy,
)
from broker.model.queue_types import QueueTypes
from broker.model.vhost import VirtualHost
from broker.streams.queue import StreamQueue

from .fakes import FakeClock, message


def policy(name: str, definition: dict[str, Any], **fields: Any) -> Policy:
    """A policy on names starting "q" unless ``pattern`` says otherwise."""
    body = {"pattern": "^q", "definition": definition, **fields}
    return parse_policy("/", name, body, operator=False)


def operator_policy(name: str, definition: dict[str, Any]) -> Policy:
    body = {"pattern": "^q", "definition": definition}
    return parse_policy("/", name, body, operator=True)


@pytest.fixture
def vhost() -> VirtualHost:
    return VirtualHost("/", FakeClock(), MemoryGauge(1 << 30))


def _set(vhost: VirtualHost, p: Policy, operator: bool = False) -> None:
    vhost.set_policy(p, operator)


# -- matching -------------------------------------------------------------------------------


def test_the_policy_of_the_highest_priority_that_matches_applies(vhost: VirtualHost) -> None:
    _set(vhost, policy("low", {"max-length": 1}, priority=1))
    _set(vhost, policy("high", {"max-length": 2}, priority=5))
    _set(vhost, policy("other", {"max-length": 3}, priority=9, pattern="^other"))
    q = vhost.declare_queue("q1", owner=None)
    assert q.policy.name == "high"
    assert q.settings.max_length == 2


def test_a_pattern_is_searched_anywhere_in_the_name(vhost: VirtualHost) -> None:
    _set(vhost, policy("mid", {"max-length": 1}, pattern="ord"))
    assert vhost.declare_queue("orders", owner=None).policy is not None
    assert vhost.declare_queue("new-orders-2", owner=None).policy is not None
    assert vhost.declare_queue("other", owner=None).policy is None


def test_on_equal_priorities_the_policy_set_first_applies(vhost: VirtualHost) -> None:
    _set(vhost, policy("b", {"max-length": 2}, priority=3))
    _set(vhost, policy("a", {"max-length": 4}, priority=3))
    assert vhost.declare_queue("q", owner=None).policy.name == "b"


@pytest.mark.parametrize(
    ("apply_to", "classic", "quorum", "stream", "exchange"),
    [
        ("all", True, True, True, True),
        ("queues", True, True, True, False),
        ("classic_queues", True, False, False, False),
        ("quorum_queues", False, True, False, False),
        ("streams", False, False, True, False),
        ("exchanges", False, False, False, True),
    ],
)
def test_apply_to_selects_the_kinds_of_object(
    apply_to: str, classic: bool, quorum: bool, stream: bool, exchange: bool
) -> None:
    p = policy("p", {"max-length-bytes": 10}, **{"apply-to": apply_to})
    assert p.applies("classic", "q") is classic
    assert p.applies("quorum", "q") is quorum
    assert p.applies("stream", "q") is stream
    assert p.applies(EXCHANGE, "q") is exchange


def test_a_policy_with_a_key_the_queue_type_does_not_support_does_not_apply_to_it() -> None:
    stream_only = policy("p", {"max-age": "1D"})
    assert not stream_only.applies("classic", "q")
    assert not stream_only.applies("quorum", "q")
    assert stream_only.applies("stream", "q")
    quorum_only = policy("p", {"delivery-limit": 3})
    assert quorum_only.applies("quorum", "q")
    assert not quorum_only.applies("classic", "q")
    assert not policy("p", {"max-length": 3}).applies("stream", "q")


def test_a_lower_priority_policy_applies_where_a_higher_one_has_an_unsupported_key(
    vhost: VirtualHost,
) -> None:
    _set(vhost, policy("ages", {"max-age": "1D"}, priority=5))
    _set(vhost, policy("lengths", {"max-length": 7}, priority=1))
    q = vhost.declare_queue("qq", owner=None, durable=True, arguments={"x-queue-type": "quorum"})
    assert q.policy.name == "lengths"


# -- combining ------------------------------------------------------------------------------


def test_an_operator_policy_caps_limits_and_overrides_overflow() -> None:
    mine = policy("mine", {"max-length": 5, "message-ttl": 60000, "overflow": "drop-head"})
    ops = operator_policy(
        "ops", {"max-length": 2, "message-ttl": 90000, "overflow": "reject-publish"}
    )
    assert merge_definitions(mine, ops) == {
        "max-length": 2,
        "message-ttl": 60000,
        "overflow": "reject-publish",
    }
    assert merge_definitions(mine, None) == dict(mine.definition)
    assert merge_definitions(None, ops) == dict(ops.definition)
    assert merge_definitions(None, None) == {}


def test_a_negative_delivery_limit_is_none_and_the_other_wins() -> None:
    unlimited = policy("u", {"delivery-limit": -1})
    assert merge_definitions(unlimited, operator_policy("o", {"delivery-limit": 5})) == {
        "delivery-limit": 5
    }
    assert merge_definitions(
        policy("p", {"delivery-limit": 9}), operator_policy("o", {"delivery-limit": 5})
    ) == {"delivery-limit": 5}


def test_a_classic_queue_takes_the_lower_limit_and_its_own_dead_lettering_and_overflow() -> None:
    definition = {
        "max-length": 5,
        "message-ttl": 100,
        "expires": 9000,
        "overflow": "reject-publish",
        "dead-letter-exchange": "policy-dlx",
    }
    arguments = {
        "x-max-length": 3,
        "x-message-ttl": 500,
        "x-overflow": "drop-head",
        "x-dead-letter-exchange": "own-dlx",
    }
    assert effective_arguments(arguments, definition, "classic") == {
        "x-max-length": 3,
        "x-message-ttl": 100,
        "x-expires": 9000,
        "x-overflow": "drop-head",
        "x-dead-letter-exchange": "own-dlx",
    }


def test_a_quorum_queue_takes_the_policys_overflow_and_the_lower_delivery_limit() -> None:
    definition = {
        "overflow": "reject-publish",
        "delivery-limit": 4,
        "dead-letter-strategy": "at-least-once",
    }
    arguments = {
        "x-overflow": "drop-head",
        "x-delivery-limit": 10,
        "x-dead-letter-strategy": "at-most-once",
    }
    assert effective_arguments(arguments, definition, "quorum") == {
        "x-overflow": "reject-publish",
        "x-delivery-limit": 4,
        "x-dead-letter-strategy": "at-most-once",
    }


def test_a_streams_retention_comes_from_its_policy_over_its_arguments() -> None:
    definition = {"max-age": "1h", "max-length-bytes": 1000}
    arguments = {"x-max-age": "7D", "x-max-length-bytes": 99, "x-queue-type": "stream"}
    assert effective_arguments(arguments, definition, "stream") == {
        "x-max-age": "1h",
        "x-max-length-bytes": 1000,
        "x-queue-type": "stream",
    }


def test_keys_a_queue_type_does_not_run_with_are_left_out() -> None:
    assert effective_arguments({}, {"queue-mode": "lazy", "max-length": 2}, "classic") == {
        "x-max-length": 2
    }
    # A routing key without an exchange routes nothing: a policy may give one alone.
    assert effective_arguments({}, {"dead-letter-routing-key": "k"}, "classic") == {}


# -- applying ------------------------------------------------------------------------------


def test_a_policy_set_later_applies_to_existing_queues_and_drops_the_oldest(
    vhost: VirtualHost,
) -> None:
    q = vhost.declare_queue("q1", owner=None)
    for i in range(10):
        q.publish(message(str(i).encode()))
    _set(vhost, policy("len", {"max-length": 3}))
    assert q.message_count == 3
    entry = q.get()
    assert entry is not None and entry.message.body == b"7"


def test_clearing_a_policy_restores_the_queues_own_arguments(vhost: VirtualHost) -> None:
    _set(vhost, policy("len", {"max-length": 1}))
    q = vhost.declare_queue("q1", owner=None, arguments={"x-max-length": 5})
    assert q.settings.max_length == 1
    vhost.clear_policy("len")
    assert q.policy is None and q.settings.max_length == 5


def test_changing_a_policy_applies_its_new_definition(vhost: VirtualHost) -> None:
    _set(vhost, policy("len", {"max-length": 1}))
    q = vhost.declare_queue("q1", owner=None)
    _set(vhost, policy("len", {"max-length": 4}))
    assert q.settings.max_length == 4


def test_a_change_moves_each_queue_to_the_policy_that_applies_now(vhost: VirtualHost) -> None:
    _set(vhost, policy("a", {"max-length": 5}, priority=5))
    _set(vhost, policy("b", {"max-length": 1}, priority=1))
    q = vhost.declare_queue("q1", owner=None)
    other = vhost.declare_queue("q2", owner=None)
    assert (q.policy.name, other.policy.name) == ("a", "a")
    _set(vhost, policy("a", {"max-length": 5}, priority=5, pattern="^q2$"))  # a: q2 only
    assert (q.policy.name, q.settings.max_length, other.policy.name) == ("b", 1, "a")
    _set(vhost, policy("c", {"max-length": 3}, priority=3))
    _set(vhost, policy("d", {"max-length": 2}, priority=0))  # lower: changes nothing
    assert (q.policy.name, q.settings.max_length, other.policy.name) == ("c", 3, "a")
    vhost.clear_policy("c")
    vhost.clear_policy("b")
    assert (q.policy.name, q.settings.max_length) == ("d", 2)


def test_an_operator_policy_applies_with_the_policy(vhost: VirtualHost) -> None:
    _set(vhost, policy("len", {"max-length": 5}))
    _set(vhost, operator_policy("cap", {"max-length": 2}), operator=True)
    q = vhost.declare_queue("q1", owner=None)
    assert (q.policy.name, q.operator_policy.name, q.settings.max_length) == ("len", "cap", 2)


def test_a_policy_expires_an_unused_queue(vhost: VirtualHost) -> None:
    clock = vhost.queue_context.clock
    _set(vhost, policy("exp", {"expires": 1000}))
    vhost.declare_queue("q1", owner=None)
    assert isinstance(clock, FakeClock)
    clock.advance(1.01)
    assert "q1" not in vhost.queues


def test_a_policy_gives_an_exchange_its_alternate_unless_it_has_one(vhost: VirtualHost) -> None:
    _set(
        vhost,
        policy(
            "ae", {"alternate-exchange": "amq.fanout"}, pattern="^x", **{"apply-to": "exchanges"}
        ),
    )
    plain = vhost.declare_exchange("x1", "direct")
    own = vhost.declare_exchange("x2", "direct", arguments={"alternate-exchange": "mine"})
    assert (plain.policy.name, plain.alternate_exchange) == ("ae", "amq.fanout")
    assert own.alternate_exchange == "mine"
    vhost.clear_policy("ae")
    assert plain.policy is None and plain.alternate_exchange is None


def test_past_max_queues_a_new_queue_is_refused_an_existing_one_redeclared(
    vhost: VirtualHost,
) -> None:
    vhost.declare_queue("q1", owner=None)
    vhost.limits["max-queues"] = 1
    assert vhost.declare_queue("q1", owner=None).name == "q1"
    with pytest.raises(Exception, match="queue limit in vhost '/' \\(1\\) is reached") as e:
        vhost.declare_queue("q2", owner=None)
    assert getattr(e.value, "reply_code", None) == 406


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {"pattern": "^x", "definition": {"max-length": 5}, "apply-to": "bogus"},
            "apply-to 'bogus' unrecognised; should be one of: 'queues', 'classic_queues',  "
            "'quorum_queues', 'streams', 'exchanges', or 'all'",
        ),
        (
            {"pattern": "^x", "definition": {"bogus-key": 5}},
            '[{<<"bogus-key">>,5}] are not recognised policy settings',
        ),
        ({"pattern": "^x", "definition": {"max-length": -1}}, "-1 is not a valid maximum length"),
        (
            {"pattern": "^x", "definition": {"max-length": "5"}},
            '<<"5">> is not a valid maximum length',
        ),
        ({"pattern": "^x", "definition": {}}, "no policy provided"),
        (
            {"pattern": "^x", "definition": {"max-length": 5}, "priority": "abc"},
            'priority should be a number, actually was <<"abc">>',
        ),
        (
            {"pattern": "^x", "definition": {"alternate-exchange": 5}},
            "5 is not a valid alternate exchange name",
        ),
        ({"pattern": "^x", "definition": {"max-age": "1X"}}, '<<"1X">> is not a valid max age'),
    ],
)
def test_a_policy_rabbitmq_refuses_is_refused_with_its_reason(
    body: dict[str, Any], reason: str
) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy("/", "p", body, operator=False)
    assert str(e.value) == f"Validation failed\n\n{reason}\n"


def test_an_operator_policy_takes_only_the_keys_rabbitmq_lets_operators_cap() -> None:
    with pytest.raises(PolicyError, match="are not recognised policy settings"):
        parse_policy("/", "o", {"pattern": "^x", "definition": {"dead-letter-exchange": "x"}}, True)
    assert parse_policy("/", "o", {"pattern": "^x", "definition": {"max-length": 1}}, True)


def test_a_policy_defaults_to_priority_0_applied_to_all() -> None:
    p = parse_policy("/", "p", {"pattern": "^x", "definition": {"max-length": 1}}, False)
    assert p.as_json() == {
        "vhost": "/",
        "name": "p",
        "pattern": "^x",
        "apply-to": "all",
        "definition": {"max-length": 1},
        "priority": 0,
    }


def test_a_streams_retention_follows_its_policy_and_its_arguments_once_cleared() -> None:
    vhost = VirtualHost(
        "/", FakeClock(), MemoryGauge(1 << 30), queue_types=QueueTypes(stream=StreamQueue)
    )
    definition = {"max-age": "1h", "max-length-bytes": 1_000_000}
    _set(vhost, policy("retention", definition, pattern="^st", **{"apply-to": "streams"}))
    arguments = {"x-queue-type": "stream", "x-max-age": "7D"}
    stream = vhost.declare_queue("st1", owner=None, durable=True, arguments=arguments)
    try:
        assert isinstance(stream, StreamQueue)
        assert (stream.log.max_age_ms, stream.log.max_bytes) == (3_600_000, 1_000_000)
        vhost.clear_policy("retention")
        assert (stream.log.max_age_ms, stream.log.max_bytes) == (7 * 86_400_000, None)
    finally:
        vhost.delete_queue(stream)
