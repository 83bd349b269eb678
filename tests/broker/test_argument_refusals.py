"""Arguments RabbitMQ 3.10.8 refuses with 406 and the texts it refuses them with: a consumer
priority that is not an integer, a single-active-consumer flag that is not a boolean, and
the quorum-queue and stream arguments on a classic queue."""

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
        ("x-queue-leader-locator", "balanced"),
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
