"""Producer names and publishing ids of the stream writer: what deduplication relies on."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_spark.sink.stream_ids import (
    MAX_BATCH,
    MAX_NAME_BYTES,
    MAX_ROWS,
    IdRangeError,
    PublishingIds,
    producer_name,
)

QUERY = "6f1c2f4e-3c55-4d57-9f38-0a8f3b5f9d11"


def test_producer_name_depends_only_on_query_and_partition() -> None:
    assert producer_name(QUERY, 3) == producer_name(QUERY, 3) == f"amqp-spark:{QUERY}:3"
    assert len({producer_name(QUERY, p) for p in range(100)}) == 100
    assert producer_name(QUERY, 3) != producer_name("other-query", 3)


def test_producer_name_longer_than_a_stream_accepts_is_refused() -> None:
    with pytest.raises(IdRangeError, match=f"more than the {MAX_NAME_BYTES} a stream accepts"):
        producer_name("q" * 250, 12)


@given(st.lists(st.integers(0, 5000), min_size=1, max_size=30), st.integers(0, 1000))
def test_ids_strictly_increase_over_batches_of_any_row_counts(
    row_counts: list[int], first_batch: int
) -> None:
    ids = list(
        itertools.chain.from_iterable(
            PublishingIds("p", first_batch + b).for_rows(0, count)
            for b, count in enumerate(row_counts)
        )
    )
    assert all(a < b for a, b in itertools.pairwise(ids))
    assert ids == [] or ids[0] > 0  # 0 is a stream's answer for a name it never saw


@given(st.integers(0, MAX_BATCH), st.integers(0, 10_000), st.integers(1, 10_000))
def test_a_retried_task_sends_every_row_under_its_first_id(
    batch: int, start: int, count: int
) -> None:
    first_attempt = PublishingIds("p", batch).for_rows(0, start + count)
    retry = PublishingIds("p", batch)
    assert list(retry.for_rows(start, count)) == list(first_attempt[start:])
    assert max(first_attempt) < (1 << 64)


def test_the_sequence_tells_how_many_rows_of_the_batch_the_stream_holds() -> None:
    ids = PublishingIds("p", 7)
    before = PublishingIds("p", 6).for_rows(0, 900)[-1]
    assert ids.rows_in_stream(0) == 0
    assert ids.rows_in_stream(before) == 0 and not ids.is_behind(before)
    assert ids.rows_in_stream(ids.for_rows(0, 41)[-1]) == 41
    later = PublishingIds("p", 8).for_rows(0, 1)[0]
    assert ids.is_behind(later) and ids.rows_in_stream(later) == MAX_ROWS


def test_batch_ids_and_row_counts_beyond_the_ids_are_refused() -> None:
    with pytest.raises(IdRangeError, match=f"batch id {MAX_BATCH + 1} is outside"):
        PublishingIds("p", MAX_BATCH + 1)
    with pytest.raises(IdRangeError, match="more than 4294967296 rows in batch 2"):
        PublishingIds("p", 2).for_rows(MAX_ROWS - 10, 11)
