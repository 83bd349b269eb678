"""How filtered stream ranges are planned, in-process: the driver's tail notes the matching
offsets it sees, and a range ends at its last match, is dropped when the tail saw it all
without one, or ends when quiet when the tail did not see all of it. And which servers
ignore filters (the source then warns)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.streams import StreamTails, plan_ranges
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
        value = "eu" if offset in matches else "us"
        tails._note_match("s", offset, SimpleNamespace(headers={"x-stream-filter-value": value}))
    return tails


def plan(tails: StreamTails, start: int, end: int) -> list[tuple[int, int, int | None]]:
    parts = plan_ranges(OPTIONS, StreamOffset({"s": start}), StreamOffset({"s": end}), tails)
    return [(p.start, p.end, p.stop_at) for p in parts]


def test_a_filtered_range_is_one_partition_ending_at_its_last_match() -> None:
    assert plan(tails_that_saw(10, 19, {12, 15}), 10, 20) == [(10, 20, 15)]


def test_a_range_the_tail_saw_without_a_match_is_not_read() -> None:
    assert plan(tails_that_saw(10, 19, {12}), 13, 20) == []


def test_a_range_starting_before_the_tail_watched_ends_when_quiet_unless_a_match_is_known() -> None:
    tails = tails_that_saw(10, 19, {15})
    assert plan(tails, 5, 12) == [(5, 12, None)]
    assert plan(tails, 5, 20) == [(5, 20, 15)]


def test_without_a_tail_a_filtered_range_ends_when_quiet() -> None:
    parts = plan_ranges(OPTIONS, StreamOffset({"s": 0}), StreamOffset({"s": 9}))
    assert [(p.start, p.end, p.stop_at) for p in parts] == [(0, 9, None)]
    assert parts[0].stream_filter is not None and parts[0].stream_filter.values == ("eu",)


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
