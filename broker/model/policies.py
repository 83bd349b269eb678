"""Policies and operator policies as RabbitMQ 4.0 has them: which one applies to a queue or
an exchange, and the values a queue then runs with.

A policy names a ``pattern`` (a regular expression searched in the name), what it applies
to (``apply-to``), a ``priority`` and a ``definition`` (keys without the ``x-`` of the
arguments they stand for). Of the policies that apply to an object the one of the highest
priority wins (on a tie the one set first); an operator policy is chosen the same way among
the operator policies, and the two combine key by key (``merge_definitions``). A policy
whose definition has a key the queue's type does not support applies to no queue of that
type (RabbitMQ's ``unsupported_policies`` of each type). The combined definition then meets
the queue's own ``x-`` arguments key by key, by each queue type's rule
(``effective_arguments``). All of this happens when a queue or an exchange is declared and
when a policy is set or cleared, never per message: the queue keeps running on its
``settings``.

Rules and texts from RabbitMQ 4.0.5 (``rabbit_policy``, ``rabbit_policies``,
``rabbit_amqqueue_process``, ``rabbit_quorum_queue``, ``rabbit_stream_queue``), measured
side by side in tests/management/test_policies.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .exchanges import Exchange
    from .queues import Queue

#: The target ``Policy.applies`` takes for an exchange (queues are named by their type).
EXCHANGE = "exchange"
#: What ``apply-to`` may name (RabbitMQ's order, for its error text).
APPLY_TO = ("queues", "classic_queues", "quorum_queues", "streams", "exchanges", "all")
#: The queue types each queue ``apply-to`` covers (None: every type).
_QUEUE_TYPES: dict[str, frozenset[str] | None] = {
    "all": None,
    "queues": None,
    "classic_queues": frozenset({"classic"}),
    "quorum_queues": frozenset({"quorum"}),
    "streams": frozenset({"stream"}),
}
#: Classic mirroring's policy keys (gone in 4.0), which no other queue type supports.
_MIRRORING = {
    "ha-mode",
    "ha-params",
    "ha-sync-mode",
    "ha-promote-on-shutdown",
    "ha-promote-on-failure",
    "queue-master-locator",
}
#: Keys of classic queues alone, of streams alone, of quorum queues alone.
_CLASSIC = {"max-priority", "queue-mode", "single-active-consumer", *_MIRRORING}
_STREAM = {"max-age", "stream-max-segment-size-bytes", "initial-cluster-size"}
_QUORUM = {"dead-letter-strategy", "target-group-size"}
#: Policy keys each queue type does not support: a policy with one of them applies to no
#: queue of that type (RabbitMQ 4.0's ``capabilities()`` of each type).
UNSUPPORTED = {
    "classic": frozenset(
        {*_STREAM, *_QUORUM, "delivery-limit", "max-in-memory-length", "max-in-memory-bytes"}
    ),
    "quorum": frozenset({*_CLASSIC, *_STREAM}),
    "stream": frozenset(
        {
            *_CLASSIC,
            *_QUORUM,
            "expires",
            "message-ttl",
            "dead-letter-exchange",
            "dead-letter-routing-key",
            "max-length",
            "max-in-memory-length",
            "max-in-memory-bytes",
            "overflow",
            "delivery-limit",
        }
    ),
}


class PolicyError(ValueError):
    """A policy RabbitMQ refuses; the message is its reason, as its API answers it."""


def erlang_term(value: Any) -> str:
    """``value`` as RabbitMQ's reasons print the JSON it decoded (Erlang's ``~tp``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return '<<"' + value.replace("\\", "\\\\").replace('"', '\\"') + '">>'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ",".join(map(erlang_term, value)) + "]"
    if isinstance(value, dict):
        pairs = (f"{erlang_term(k)} => {erlang_term(v)}" for k, v in value.items())
        return "#{" + ",".join(pairs) + "}"
    return repr(value)


def _integer(minimum: int | None = 0, maximum: int | None = None) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)

    return check


def _one_of(*choices: Any) -> Callable[[Any], bool]:
    return lambda value: not isinstance(value, bool) and value in choices


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _max_age(value: Any) -> bool:
    """RabbitMQ's ``check_max_age``: a positive count and a unit (Y, M, D, h, m or s)."""
    return isinstance(value, str) and re.fullmatch(r"0*[1-9][0-9]*[YMDhms]", value) is not None


#: RabbitMQ's largest ``stream-max-segment-size-bytes`` (3 GB).
MAX_STREAM_SEGMENT_SIZE = 3_000_000_000
#: Every policy key RabbitMQ 4.0 knows (its ``policy_validator`` registry, less plugins'),
#: its check, and the end of its text for a value that fails it.
VALIDATORS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "alternate-exchange": (_text, "is not a valid alternate exchange name"),
    "consumer-timeout": (_integer(), "is not a valid consumer timeout"),
    "dead-letter-exchange": (_text, "is not a valid dead letter exchange name"),
    "dead-letter-routing-key": (_text, "is not a valid dead letter routing key"),
    "dead-letter-strategy": (
        _one_of("at-most-once", "at-least-once"),
        "is not a valid dead letter strategy",
    ),
    "message-ttl": (_integer(), "is not a valid message TTL"),
    "expires": (_integer(1), "is not a valid queue expiry"),
    "max-length": (_integer(), "is not a valid maximum length"),
    "max-length-bytes": (_integer(), "is not a valid maximum length in bytes"),
    "max-in-memory-length": (_integer(), "is not a valid maximum memory in bytes"),
    "max-in-memory-bytes": (_integer(), "is not a valid maximum memory in bytes"),
    "queue-mode": (_one_of("default", "lazy"), "is not a valid queue-mode value"),
    "queue-version": (_one_of(1, 2), "is not a valid queue-version value"),
    "overflow": (
        _one_of("drop-head", "reject-publish", "reject-publish-dlx"),
        "is not a valid overflow value",
    ),
    "delivery-limit": (_integer(None), "is not a valid delivery limit"),
    "max-age": (_max_age, "is not a valid max age"),
    "queue-leader-locator": (
        _one_of("client-local", "balanced", "random", "least-leaders"),
        "is not a valid queue leader locator value",
    ),
    "initial-cluster-size": (_integer(), "is not a valid cluster size"),
    "stream-max-segment-size-bytes": (
        _integer(0, MAX_STREAM_SEGMENT_SIZE),
        "is not a valid segment size",
    ),
    "stream-filter-size-bytes": (
        _integer(16, 255),
        "is not a valid filter size. Valid range is 16-255",
    ),
}
#: The keys an operator policy may set (RabbitMQ's ``operator_policy_validator``).
OPERATOR_KEYS = frozenset(
    {
        "expires",
        "message-ttl",
        "max-length",
        "max-length-bytes",
        "max-in-memory-length",
        "max-in-memory-bytes",
        "delivery-limit",
        "queue-version",
        "overflow",
    }
)


@dataclass(frozen=True)
class Policy:
    """A policy or operator policy of virtual host ``vhost``, checked (``parse_policy``)."""

    vhost: str
    name: str
    pattern: str
    apply_to: str
    definition: Mapping[str, Any]
    priority: int | float
    regex: re.Pattern[str] = field(compare=False, repr=False)
    #: What it can apply to: the queue types ``apply-to`` names whose keys it has none
    #: unsupported of, and "exchange" (worked out once: a lookup runs per declaration).
    targets: frozenset[str] = field(compare=False, repr=False, default=frozenset())

    def as_json(self, with_vhost: bool = True) -> dict[str, Any]:
        """As the API lists it (and definitions export it, without the vhost there)."""
        where = {"vhost": self.vhost} if with_vhost else {}
        return {
            **where,
            "name": self.name,
            "pattern": self.pattern,
            "apply-to": self.apply_to,
            "definition": dict(self.definition),
            "priority": self.priority,
        }

    def applies(self, target: str, name: str) -> bool:
        """Whether it applies to the queue of type ``target`` (or the "exchange") ``name``."""
        return target in self.targets and self.regex.search(name) is not None


def _targets(apply_to: str, definition: Mapping[str, Any]) -> frozenset[str]:
    types = _QUEUE_TYPES.get(apply_to, frozenset())
    found = {
        type_name
        for type_name, unsupported in UNSUPPORTED.items()
        if (types is None or type_name in types) and not unsupported.intersection(definition)
    }
    if apply_to in ("exchanges", "all"):
        found.add(EXCHANGE)
    return frozenset(found)


def parse_policy(vhost: str, name: str, body: Mapping[str, Any], operator: bool) -> Policy:
    """The policy ``body`` (the API's JSON: ``pattern``, ``definition``, ``priority``,
    ``apply-to``) describes; PolicyError with RabbitMQ's reason otherwise. Missing
    ``pattern`` or ``definition`` are the caller's to refuse (RabbitMQ's API refuses them
    before it validates)."""
    priority = body.get("priority", 0)
    if priority is None:
        priority = 0
    if isinstance(priority, bool) or not isinstance(priority, (int, float)):
        _invalid(f"priority should be a number, actually was {erlang_term(priority)}")
    pattern = body.get("pattern")
    if not isinstance(pattern, str):
        _invalid(f"pattern should be a string, actually was {erlang_term(pattern)}")
    try:
        regex = re.compile(pattern)
    except re.error as e:
        _invalid(f'pattern should be regular expression but is invalid: {{"{e.msg}",{e.pos or 0}}}')
    apply_to = body.get("apply-to")
    if apply_to is None:
        apply_to = "all"
    if apply_to not in APPLY_TO:
        _invalid(
            f"apply-to '{apply_to}' unrecognised; should be one of: 'queues', "
            "'classic_queues',  'quorum_queues', 'streams', 'exchanges', or 'all'"
        )
    definition = body.get("definition")
    if not isinstance(definition, dict):
        _invalid(f"definition must be a dictionary: {erlang_term(definition)}")
    if not definition:
        _invalid("no policy provided")
    known = OPERATOR_KEYS if operator else VALIDATORS.keys()
    unknown = [(k, v) for k, v in definition.items() if k not in known]
    if unknown:
        terms = ",".join(f"{{{erlang_term(k)},{erlang_term(v)}}}" for k, v in unknown)
        _invalid(f"[{terms}] are not recognised policy settings")
    for key, value in definition.items():
        check, what = VALIDATORS[key]
        if not check(value):
            _invalid(f"{erlang_term(value)} {what}")
    targets = _targets(apply_to, definition)
    return Policy(vhost, name, pattern, apply_to, dict(definition), priority, regex, targets)


def _invalid(reason: str) -> NoReturn:
    raise PolicyError(f"Validation failed\n\n{reason}\n")


def by_priority(policies: Iterable[Policy]) -> list[Policy]:
    """``policies`` (in the order they were set) in the order they are tried: the highest
    priority first; on a tie the one set first (measured on RabbitMQ 4.0.5)."""
    return sorted(policies, key=lambda p: -p.priority)


def first(ordered: list[Policy], target: str, name: str) -> Policy | None:
    """The first of ``ordered`` (``by_priority``) that applies to ``target`` ``name``."""
    for policy in ordered:
        if target in policy.targets and policy.regex.search(name) is not None:
            return policy
    return None


def _min(policy: Any, other: Any) -> Any:
    return min(policy, other)


def _delivery_limit(policy: Any, other: Any) -> Any:
    """A negative delivery limit is none: then the larger (more conservative) one wins."""
    if policy < 0 or other < 0:
        return max(policy, other)
    return min(policy, other)


def _second(_policy: Any, other: Any) -> Any:
    return other


def _first(policy: Any, _other: Any) -> Any:
    return policy


#: How an operator policy's value meets the policy's, per key (``merge_policy_value``).
_OPERATOR_MERGE: dict[str, Callable[[Any, Any], Any]] = {
    "message-ttl": _min,
    "max-length": _min,
    "max-length-bytes": _min,
    "max-in-memory-length": _min,
    "max-in-memory-bytes": _min,
    "expires": _min,
    "delivery-limit": _delivery_limit,
    "queue-version": _second,
    "overflow": _second,
}


def merge_definitions(policy: Policy | None, operator: Policy | None) -> dict[str, Any]:
    """The effective policy definition: the policy's and the operator policy's keys, each
    key both set merged as RabbitMQ merges it (the lower limit; the operator's overflow)."""
    mine = dict(policy.definition) if policy is not None else {}
    theirs = dict(operator.definition) if operator is not None else {}
    merged: dict[str, Any] = {}
    for key in sorted(mine.keys() | theirs.keys()):
        if key in mine and key in theirs:
            merged[key] = _OPERATOR_MERGE.get(key, _second)(mine[key], theirs[key])
        else:
            merged[key] = mine[key] if key in mine else theirs[key]
    return merged


#: Per queue type, the policy keys it runs with and how a policy value meets the queue's own
#: ``x-`` argument (policy value, argument value) -> value: the lower limit, or the argument
#: (``_second``), or the policy (``_first``) winning outright.
RESOLVE: dict[str, dict[str, Callable[[Any, Any], Any]]] = {
    "classic": {
        "expires": _min,
        "dead-letter-exchange": _second,
        "dead-letter-routing-key": _second,
        "message-ttl": _min,
        "max-length": _min,
        "max-length-bytes": _min,
        "overflow": _second,
    },
    "quorum": {
        "max-length": _min,
        "overflow": _first,
        "max-length-bytes": _min,
        "delivery-limit": _delivery_limit,
        "expires": _min,
        "message-ttl": _min,
        "dead-letter-exchange": _second,
        "dead-letter-routing-key": _second,
        "dead-letter-strategy": _second,
    },
    "stream": {
        "max-length-bytes": _first,
        "max-age": _first,
        "stream-max-segment-size-bytes": _first,
        "stream-filter-size-bytes": _first,
    },
}


def effective_arguments(
    arguments: Mapping[str, Any], definition: Mapping[str, Any], type_name: str
) -> dict[str, Any]:
    """The ``x-`` arguments a queue of ``type_name`` declared with ``arguments`` runs with
    under the effective policy ``definition``."""
    effective = dict(arguments)
    for key, resolve in RESOLVE.get(type_name, {}).items():
        if key not in definition:
            continue
        name = "x-" + key
        value = definition[key]
        effective[name] = value if arguments.get(name) is None else resolve(value, arguments[name])
    if "x-dead-letter-exchange" not in effective:
        # A routing key without an exchange routes nothing (RabbitMQ takes it from a
        # policy that way; only a declaration is refused for it).
        effective.pop("x-dead-letter-routing-key", None)
    return effective


class Policies:
    """The policies and operator policies of one virtual host, by name in the order set, and
    the two in the order they are tried (``by_priority``)."""

    def __init__(self) -> None:
        self.policies: dict[str, Policy] = {}
        self.operator_policies: dict[str, Policy] = {}
        self._ordered: list[Policy] = []
        self._ordered_operator: list[Policy] = []

    def __bool__(self) -> bool:
        return bool(self.policies or self.operator_policies)

    def table(self, operator: bool) -> dict[str, Policy]:
        return self.operator_policies if operator else self.policies

    def _changed(self, operator: bool) -> None:
        ordered = by_priority(self.table(operator).values())
        if operator:
            self._ordered_operator = ordered
        else:
            self._ordered = ordered

    def set(self, policy: Policy, operator: bool) -> Policy | None:
        """Add or replace (keeping its place); the one it replaces, if any."""
        table = self.table(operator)
        replaced = table.get(policy.name)
        table[policy.name] = policy
        self._changed(operator)
        return replaced

    def clear(self, name: str, operator: bool) -> Policy | None:
        """Remove the one named ``name``; it, or None if there was none."""
        cleared = self.table(operator).pop(name, None)
        if cleared is not None:
            self._changed(operator)
        return cleared

    def for_queue(self, type_name: str, name: str) -> tuple[Policy | None, Policy | None]:
        """The policy and the operator policy that apply to queue ``name`` of ``type_name``."""
        return first(self._ordered, type_name, name), first(self._ordered_operator, type_name, name)

    def for_exchange(self, name: str) -> Policy | None:
        return first(self._ordered, EXCHANGE, name)

    def apply_to_queue(self, queue: Queue) -> None:
        """Give ``queue`` the policies that apply to it now, and run it with the arguments
        they make of its own; nothing when they are those it has."""
        policy, operator = self.for_queue(queue.type_name, queue.name)
        if policy is queue.policy and operator is queue.operator_policy:
            return
        queue.policy, queue.operator_policy = policy, operator
        definition = merge_definitions(policy, operator)
        queue.apply_arguments(effective_arguments(queue.arguments, definition, queue.type_name))

    def apply_to_exchange(self, exchange: Exchange) -> None:
        """Give ``exchange`` the policy that applies to it now: its ``alternate-exchange``
        when the exchange was declared without one (the argument wins)."""
        policy = self.for_exchange(exchange.name)
        if policy is exchange.policy:
            return
        exchange.policy = policy
        ae = exchange.arguments.get("alternate-exchange")
        if ae is None and policy is not None:
            ae = policy.definition.get("alternate-exchange")
        exchange.alternate_exchange = ae if isinstance(ae, str) and ae else None

    def reapply(
        self,
        old: Policy | None,
        new: Policy | None,
        operator: bool,
        queues: Iterable[Queue],
        exchanges: Iterable[Exchange],
    ) -> None:
        """Policy ``old`` was replaced by ``new`` (either None: set or cleared): the objects
        it can change get the policies that apply to them now. Only those: the ones that
        had ``old`` and those ``new`` applies to (the others' choice is as it was), so that
        a change costs one pattern search per object, not one per policy."""
        for q in queues:
            had = q.operator_policy if operator else q.policy
            if (had is not None and had is old) or (
                new is not None and new.applies(q.type_name, q.name)
            ):
                self.apply_to_queue(q)
        if operator:
            return
        for ex in exchanges:
            if (ex.policy is not None and ex.policy is old) or (
                new is not None and new.applies(EXCHANGE, ex.name)
            ):
                self.apply_to_exchange(ex)
