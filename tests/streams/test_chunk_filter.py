"""Chunk filters in the model, without sockets: the Bloom filter, its place in the log
(persisted with each chunk) and the stream queue passing chunks a consumer's filter cannot match."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.model.message import Message
from broker.model.queues import Consumer
from broker.model.vhost import VirtualHost
from broker.streams.chunk_filter import (
    UNFILTERED,
    ConsumerFilter,
    InvalidFilter,
    chunk_filter,
    consumer_filter,
    may_contain,
)
from broker.streams.log import SegmentedLog

from .test_stream_queue import Properties, Sink, declare, loop, vhost

__all__ = ["loop", "vhost"]


def test_a_chunk_filter_never_misses_a_value_it_holds() -> None:
    values = [f"region-{i}" for i in range(40)]
    filter_bytes = chunk_filter(values)
    assert all(may_contain(filter_bytes, v) for v in values)


def test_a_chunk_filter_of_one_value_rejects_almost_every_other() -> None:
    filter_bytes = chunk_filter(["eu"])
    false_positives = sum(may_contain(filter_bytes, f"other-{i}") for i in range(2000))
    assert false_positives < 2000 * 0.02  # 3 bits of 128 set: about 1 in 600,000 expected


def test_a_larger_filter_holds_its_values_in_more_bits() -> None:
    filter_bytes = chunk_filter(["a", "b"], size=64)
    assert len(filter_bytes) == 64
    assert may_contain(filter_bytes, "a") and may_contain(filter_bytes, "b")


def test_a_chunk_without_a_filter_holds_unfiltered_messages_alone() -> None:
    # Osiris writes no bloom filter in a chunk where no message has a filter value.
    assert not ConsumerFilter(("a",)).matches_chunk(b"")
    assert ConsumerFilter(("a",), match_unfiltered=True).matches_chunk(b"")


def test_match_unfiltered_matches_chunks_holding_unfiltered_messages() -> None:
    unfiltered_only = chunk_filter([UNFILTERED])
    assert not ConsumerFilter(("a",)).matches_chunk(unfiltered_only)
    assert ConsumerFilter(("a",), match_unfiltered=True).matches_chunk(unfiltered_only)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, None),
        ({"x-stream-filter": "a"}, ConsumerFilter(("a",))),
        ({"x-stream-filter": ["a", 1, "b"]}, ConsumerFilter(("a", "b"))),
        ({"x-stream-filter": "a", "x-stream-match-unfiltered": True}, ConsumerFilter(("a",), True)),
        ({"x-stream-filter": "a", "x-stream-match-unfiltered": "true"}, ConsumerFilter(("a",))),
        ({"x-stream-filter": 7}, None),
        ({"x-stream-match-unfiltered": True}, None),
    ],
)
def test_consume_arguments_read_as_rabbitmq_4_reads_them(
    arguments: dict[str, object], expected: ConsumerFilter | None
) -> None:
    assert consumer_filter(arguments) == expected


@pytest.mark.parametrize("array", [[], [1], [b"a"]])
def test_a_filter_array_without_a_string_is_invalid(array: list[object]) -> None:
    with pytest.raises(InvalidFilter):
        consumer_filter({"x-stream-filter": array})


def test_the_log_keeps_each_chunks_filter_across_a_reopen(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        log.append([b"1", b"2"], filter_bytes=chunk_filter(["a"]))
        log.append([b"3"], filter_bytes=chunk_filter(["b"]))
    with SegmentedLog(tmp_path) as log:
        assert log.chunk_filter(1) == (chunk_filter(["a"]), 2)
        assert log.chunk_filter(2) == (chunk_filter(["b"]), 3)
        assert [r.payload for r in log.read(0)] == [b"1", b"2", b"3"]


def test_the_queue_passes_unread_the_chunks_a_consumer_cannot_match(vhost: VirtualHost) -> None:
    q = declare(vhost)
    for value in ["a", "b", None, "a", "c"]:  # each flush is a chunk
        headers = {} if value is None else {"x-stream-filter-value": value}
        q.publish(Message("", q.name, Properties(headers=headers), b"m"))
        q.flush()
    sink = Sink()
    consumer = Consumer("c", q, sink, prefetch=100)
    q.add_consumer(consumer, {"x-stream-offset": "first", "x-stream-filter": ["a", "c"]})
    q.dispatch()
    assert sink.offsets == [0, 3, 4]
    q.publish(Message("", q.name, Properties(headers={"x-stream-filter-value": "b"}), b"m"))
    q.publish(Message("", q.name, Properties(headers={"x-stream-filter-value": "c"}), b"m"))
    q.flush()  # one chunk holding a match: delivered whole
    assert sink.offsets == [0, 3, 4, 5, 6]
