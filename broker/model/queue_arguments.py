"""A queue's ``x-`` arguments validated (``QueueSettings``) and the checks of single
arguments (``int_arg``, ``consumer_priority``), refused with RabbitMQ's reply texts."""

from __future__ import annotations

from typing import Any, TypeGuard

from amqp_protocol import errors

from .field_types import amqp_type_name

#: RabbitMQ's modes, and one of ours: ``drop-lowest-priority`` (rules basic:05, message:05,
#: stream:01 of AMQP 0-9) drops the oldest message of the lowest priority present instead of
#: the head; without priorities it is drop-head.
OVERFLOW_MODES = ("drop-head", "reject-publish", "reject-publish-dlx", "drop-lowest-priority")
_MAX_PRIORITY_LIMIT = 255
#: The values of ``x-queue-leader-locator`` (RabbitMQ 4.0 takes the last two as aliases).
LEADER_LOCATORS = frozenset({"client-local", "balanced", "random", "least-leaders"})


def _invalid_arg(queue: str, vhost: str, name: str, why: str) -> errors.AMQPError:
    return errors.PreconditionFailed(
        f"PRECONDITION_FAILED - invalid arg '{name}' for queue '{queue}' in vhost '{vhost}': {why}"
    )


def _is_integer(value: object) -> TypeGuard[int]:
    """An AMQP integer (a boolean is not one, as for RabbitMQ)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _expected_integer(value: object) -> str:
    return f'"expected integer, got {amqp_type_name(value)}"'


def consumer_priority(queue: str, vhost: str, arguments: dict[str, Any] | None) -> int:
    """basic.consume's ``x-priority`` (0 without one); anything but an integer is refused."""
    value = (arguments or {}).get("x-priority", 0)
    if not _is_integer(value):
        raise _invalid_arg(queue, vhost, "x-priority", _expected_integer(value))
    return value


def int_arg(queue: str, vhost: str, args: dict[str, Any], name: str, minimum: int) -> int | None:
    """An integer argument at least ``minimum`` (0 or 1), refused with RabbitMQ's texts."""
    value = args.get(name)
    if value is None:
        return None
    if not _is_integer(value):
        why = _expected_integer(value)
    elif value < 0:
        why = f"{{value_negative,{value}}}"
    elif value < minimum:
        why = f"{{value_zero,{value}}}"
    else:
        return value
    raise _invalid_arg(queue, vhost, name, why)


class QueueSettings:
    """The ``x-`` arguments of a queue, validated."""

    __slots__ = (
        "message_ttl",
        "expires",
        "max_length",
        "max_length_bytes",
        "overflow",
        "dead_letter_exchange",
        "dead_letter_routing_key",
        "max_priority",
        "single_active_consumer",
        "delivery_limit",
    )

    def __init__(self, queue: str, vhost: str, args: dict[str, Any]) -> None:
        self.message_ttl = int_arg(queue, vhost, args, "x-message-ttl", 0)
        self.expires = int_arg(queue, vhost, args, "x-expires", 1)
        self.max_length = int_arg(queue, vhost, args, "x-max-length", 0)
        self.max_length_bytes = int_arg(queue, vhost, args, "x-max-length-bytes", 0)
        self.max_priority = int_arg(queue, vhost, args, "x-max-priority", 0)
        if self.max_priority is not None:
            self.max_priority = min(self.max_priority, _MAX_PRIORITY_LIMIT)
        overflow = args.get("x-overflow", "drop-head")
        if overflow not in OVERFLOW_MODES:
            raise _invalid_arg(queue, vhost, "x-overflow", "invalid_overflow")
        self.overflow: str = overflow
        sac = args.get("x-single-active-consumer", False)
        if not isinstance(sac, bool):
            why = f"{{unacceptable_type,{amqp_type_name(sac)}}}"
            raise _invalid_arg(queue, vhost, "x-single-active-consumer", why)
        self.single_active_consumer = sac
        dlx = args.get("x-dead-letter-exchange")
        self.dead_letter_exchange: str | None = dlx if isinstance(dlx, str) else None
        dlk = args.get("x-dead-letter-routing-key")
        if dlk is not None and dlx is None:
            raise _invalid_arg(
                queue, vhost, "x-dead-letter-routing-key", "routing_key_but_no_dlx_defined"
            )
        self.dead_letter_routing_key: str | None = dlk if isinstance(dlk, str) else None
        #: RabbitMQ's quorum-queue argument, here on any queue: how many times a message may
        #: come back unacknowledged before it is dead-lettered (reason ``delivery_limit``).
        self.delivery_limit = int_arg(queue, vhost, args, "x-delivery-limit", 0)
        # Where a queue's leader goes in a cluster: checked on every queue type in
        # RabbitMQ 4.0 (3.10 refused it on classic queues); one node has nothing to place.
        locator = args.get("x-queue-leader-locator", "client-local")
        if not isinstance(locator, str):
            why = f"{{unacceptable_type,{amqp_type_name(locator)}}}"
            raise _invalid_arg(queue, vhost, "x-queue-leader-locator", why)
        if locator not in LEADER_LOCATORS:
            raise _invalid_arg(queue, vhost, "x-queue-leader-locator", "invalid_queue_locator_arg")
