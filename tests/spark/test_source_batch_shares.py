"""How a micro-batch's rows are shared between the queues of a classic-queue query."""

from __future__ import annotations

import pytest

from amqp_spark.source.classic.driver_consumers import fair_shares


def test_every_queue_gets_an_equal_share_when_all_have_enough() -> None:
    assert fair_shares({"a": 100, "b": 100, "c": 100}, 30) == {"a": 10, "b": 10, "c": 10}


def test_a_queue_with_fewer_waiting_leaves_its_share_to_the_others() -> None:
    assert fair_shares({"a": 2, "b": 100, "c": 100}, 30) == {"a": 2, "b": 14, "c": 14}


def test_everything_is_taken_when_less_than_the_total_waits() -> None:
    assert fair_shares({"a": 3, "b": 0, "c": 5}, 100) == {"a": 3, "b": 0, "c": 5}


@pytest.mark.parametrize("total", [1, 7, 29, 1000])
def test_shares_never_exceed_the_total_or_what_waits(total: int) -> None:
    available = {"a": 11, "b": 5, "c": 17}
    shares = fair_shares(available, total)
    assert sum(shares.values()) == min(total, sum(available.values()))
    assert all(shares[q] <= available[q] for q in available)
