"""How filtered stream ranges are planned, in-process: the driver's tail notes the matching
offsets it sees; a range read with the filter ends at a match the tail knows (its last match,
else the first one after it), is dropped when the tail saw it all without one, and is read
unfiltered by offset, where the tail did not watch, when no match is known. And which
servers ignore filters (the source then warns)."""

from __future__ import annotations

import pytest

from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.ranges import StreamTails, plan_ranges
from amqp_spark.stream_filter import rabbitmq_without_filtering

OPTIONS = SourceOptions.parse(
    {
        "uri": "amqp://127.0.0.1",
        "queue": "s",
        "queueType": "stream",
        "filterValues": "eu",
        "rowsPerPartition": "2",
    }
)


def tails_that_saw(first: int, last: int, matches: set[int]) -> StreamTails:
    """A tail (never connected) that saw offsets ``first..last``, ``matches`` tagged eu."""
    tails = StreamTails(OPTIONS)
    for offset in range(first, last + 1):
        tails._seen["s"].note(offset, offset in matches)
    return tails


Plan = list[tuple[int, int, int | None, bool]]


def plan(tails: StreamTails, start: int, end: int) -> Plan:
    """(start, end, stop_at, filtered by the broker) of each partition."""
    parts = plan_ranges(OPTIONS, StreamOffset({"s": start}), StreamOffset({"s": end}), tails)
    assert all(p.stream_filter is not None for p in parts), "every row is checked again"
    return [(p.start, p.end, p.stop_at, p.filter_on_broker) for p in parts]


def by_offset(start: int, end: int) -> Plan:
    """An unfiltered read of ``[start, end)`` in pieces of rowsPerPartition (2), each
    stopping at its last offset."""
    return [(o, min(o + 2, end), min(o + 2, end) - 1, False) for o in range(start, end, 2)]


def test_a_filtered_range_is_one_partition_ending_at_its_last_match() -> None:
    assert plan(tails_that_saw(10, 19, {12, 15}), 10, 20) == [(10, 20, 15, True)]


def test_a_range_the_tail_saw_without_a_match_is_not_read() -> None:
    assert plan(tails_that_saw(10, 19, {12}), 13, 20) == []


def test_a_range_starting_before_the_tail_watched_ends_at_its_last_match_seen() -> None:
    assert plan(tails_that_saw(10, 19, {15}), 5, 20) == [(5, 20, 15, True)]


def test_a_range_without_a_known_match_reads_on_to_the_first_match_after_it() -> None:
    tails = tails_that_saw(10, 19, {15, 18})
    assert plan(tails, 5, 12) == [(5, 12, 15, True)], "offsets 5-9 were not watched"
    assert plan(tails, 12, 14) == [], "the tail saw 12-13"
    assert plan(tails, 16, 18) == [], "the tail saw 16-17"


def test_a_range_with_no_match_known_at_or_after_it_is_read_unfiltered_where_not_watched() -> None:
    tails = tails_that_saw(10, 19, set())
    assert plan(tails, 5, 20) == [(5, 7, 6, False), (7, 9, 8, False), (9, 10, 9, False)]
    assert plan(tails, 6, 9) == by_offset(6, 9)


def test_a_match_seen_before_the_tail_reattached_proves_no_stretch_empty() -> None:
    tails = tails_that_saw(10, 19, {12})
    tails._seen["s"].detached()  # offsets 20-29 came while the tail was away
    for offset in range(30, 40):
        tails._seen["s"].note(offset, False)
    assert plan(tails, 10, 40) == by_offset(10, 30), "20-29 may hold a match after 12"
    assert plan(tails, 5, 11) == [(5, 11, 12, True)], "12 is still a match to stop at"


def test_offsets_past_what_the_tail_saw_are_not_known_to_hold_no_match() -> None:
    tails = tails_that_saw(10, 19, {15})
    assert plan(tails, 16, 25) == by_offset(16, 25)


@pytest.mark.parametrize(
    ("server", "old"),
    [
        ({"product": "RabbitMQ", "version": "3.10.8"}, "3.10.8"),
        ({"product": "RabbitMQ", "version": "3.13.0"}, None),
        ({"product": "RabbitMQ", "version": "4.0.5"}, None),
        ({"product": "amqp-spark broker", "version": "0.1.0"}, None),
    ],
)
def test_a_rabbitmq_before_3_13_is_known_to_ignore_filters(
    server: dict[str, str], old: str | None
) -> None:
    assert rabbitmq_without_filtering(server) == old
