"""Confirm bookkeeping: single and multiple acks and nacks, returns."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import SPEC_0_9_1
from amqp_spark.client import PublishNacked, PublishReturned
from amqp_spark.client.confirms import ConfirmTracker
from amqp_spark.client.delivery import ReturnedMessage


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


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 12), st.booleans(), st.booleans(), st.integers(0, 4)),
        max_size=60,
    )
)
def test_settling_agrees_with_a_set_of_outstanding_sequence_numbers(
    steps: list[tuple[int, bool, bool, int]],
) -> None:
    """Any mix of publishes, single and multiple acks and nacks, in or out of order,
    duplicated or for unknown tags: the tracker settles what a plain set would."""
    t = ConfirmTracker()
    outstanding: set[int] = set()
    nacked: list[int] = []
    for tag, multiple, ack, publish in steps:
        outstanding.update(t.published(publish))
        if multiple:
            hit = sorted(s for s in outstanding if tag == 0 or s <= tag)
        else:
            hit = [tag] if tag in outstanding else []
        outstanding.difference_update(hit)
        if not ack:
            nacked += hit
        t.confirmed(tag, multiple, ack=ack)
        assert t.outstanding == len(outstanding)
    failure = t.take_failure()
    if nacked:
        assert isinstance(failure, PublishNacked) and failure.sequence_numbers == nacked
    else:
        assert failure is None
