"""Confirm bookkeeping: single and multiple acks and nacks, returns."""

from __future__ import annotations

from amqp_spark.client import PublishNacked, PublishReturned
from amqp_spark.client.confirms import ConfirmTracker
from amqp_spark.client.delivery import ReturnedMessage
from amqp_spark.protocol import SPEC_0_9_1


def test_sequence_numbers_count_from_one_across_batches() -> None:
    t = ConfirmTracker()
    assert t.published(3) == range(1, 4)
    assert t.published(2) == range(4, 6)
    assert t.outstanding == 5


def test_multiple_ack_confirms_everything_up_to_the_tag() -> None:
    t = ConfirmTracker()
    t.published(10)
    t.confirmed(7, False, ack=True)
    t.confirmed(5, True, ack=True)
    assert t.outstanding == 4  # 6, 8, 9, 10
    t.confirmed(10, True, ack=True)
    assert t.outstanding == 0
    assert t.take_failure() is None


def test_nacks_are_reported_with_their_sequence_numbers() -> None:
    t = ConfirmTracker()
    t.published(6)
    t.confirmed(2, False, ack=False)
    t.confirmed(4, True, ack=False)
    t.confirmed(6, True, ack=True)
    failure = t.take_failure()
    assert isinstance(failure, PublishNacked)
    assert failure.sequence_numbers == [2, 1, 3, 4] and failure.count == 4
    assert t.take_failure() is None


def test_returns_are_reported_even_when_acked() -> None:
    t = ConfirmTracker()
    t.published(2)
    props = SPEC_0_9_1.properties("basic")()
    t.returned(ReturnedMessage(312, "NO_ROUTE", "amq.direct", "nowhere", props, b"x"))
    t.confirmed(2, True, ack=True)
    failure = t.take_failure()
    assert isinstance(failure, PublishReturned)
    assert (failure.count, failure.reply_code, failure.reply_text) == (1, 312, "NO_ROUTE")
