"""Arguments RabbitMQ 4.0 refuses with 406 and the texts it refuses them with (measured on
3.10.8 and again on 4.0.5): a consumer priority that is not an integer, a single-active-
consumer flag that is not a boolean, the quorum-queue and stream arguments on a classic
queue, and a leader locator RabbitMQ does not know (4.0 takes one on a classic queue too;
3.10 refused it there)."""

from __future__ import annotations

from typing import Any

import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker


@pytest.mark.parametrize(
    ("priority", "amqp_type"), [("high", "longstr"), (True, "bool")], ids=["string", "boolean"]
)
def test_a_consumer_priority_that_is_not_an_integer_is_refused(
    channel: BlockingChannel, name: str, priority: Any, amqp_type: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.basic_consume(name, lambda *a: None, arguments={"x-priority": priority})
    assert (e.value.reply_code, e.value.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg 'x-priority' for queue '{name}' in vhost '/': "
        f'"expected integer, got {amqp_type}"',
    )


@pytest.mark.parametrize(
    ("flag", "amqp_type"), [("yes", "longstr"), (1, "signedint")], ids=["string", "integer"]
)
def test_a_single_active_consumer_flag_that_is_not_a_boolean_is_refused(
    channel: BlockingChannel, name: str, flag: Any, amqp_type: str
) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, arguments={"x-single-active-consumer": flag})
    assert (e.value.reply_code, e.value.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg 'x-single-active-consumer' for queue '{name}' in "
        f"vhost '/': {{unacceptable_type,{amqp_type}}}",
    )


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("x-dead-letter-strategy", "at-least-once"),
        ("x-quorum-initial-group-size", 1),
        ("x-max-age", "1D"),
        ("x-stream-max-segment-size-bytes", 1000),
        ("x-initial-cluster-size", 1),
    ],
)
def test_a_classic_queue_refuses_the_arguments_of_other_queue_types(
    channel: BlockingChannel, name: str, argument: str, value: Any
) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, arguments={argument: value})
    assert (e.value.reply_code, e.value.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg '{argument}' for queue '{name}' in vhost '/' "
        "of queue type rabbit_classic_queue",
    )


def test_argument_values_are_checked_before_the_queue_type_takes_them(
    channel: BlockingChannel, name: str
) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(
            name, arguments={"x-dead-letter-strategy": "at-least-once", "x-max-length": "a"}
        )
    assert e.value.reply_text == (
        f"PRECONDITION_FAILED - invalid arg 'x-max-length' for queue '{name}' in vhost '/': "
        '"expected integer, got longstr"'
    )


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_every_queue_type_takes_a_known_leader_locator_and_refuses_others(
    channel: BlockingChannel, name: str, queue_type: str
) -> None:
    where = f"for queue '{name}' in vhost '/'"
    for locator in ("client-local", "balanced", "random", "least-leaders"):
        arguments = {"x-queue-type": queue_type, "x-queue-leader-locator": locator}
        channel.queue_declare(name, durable=True, arguments=arguments)
        channel.queue_delete(name)
    for value, why in (
        ("nearest", "invalid_queue_locator_arg"),
        (5, "{unacceptable_type,signedint}"),
    ):
        ch = channel.connection.channel()
        with pytest.raises(ChannelClosedByBroker) as e:
            ch.queue_declare(
                name,
                durable=True,
                arguments={"x-queue-type": queue_type, "x-queue-leader-locator": value},
            )
        assert (e.value.reply_code, e.value.reply_text) == (
            406,
            f"PRECONDITION_FAILED - invalid arg 'x-queue-leader-locator' {where}: {why}",
        )
