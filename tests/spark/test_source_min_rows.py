"""``minMessagesPerTrigger`` with ``maxTriggerDelay``, as Kafka's ``minOffsetsPerTrigger``:
a micro-batch waits for that many messages or that long since the last batch, whichever
comes first. The gate is tested with a fake clock; queries on the bundled broker, RabbitMQ 4
and 3.10 show Spark passes ``ReadMinRows`` and the source holds and releases batches by it."""

from __future__ import annotations

import time

import pytest
from pyspark.sql import DataFrame

from amqp_spark.options import OptionError
from amqp_spark.source.min_rows import MinRowsGate
from amqp_spark.source.options import SourceOptions
from testbed.waiting import wait_until
from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import bodies, classic_options, stream_options


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_batch_waits_for_the_minimum_until_the_delay_since_the_last_batch() -> None:
    clock = FakeClock()
    gate = MinRowsGate(10, max_delay=30.0, clock=clock)

    assert not gate.admits(4)
    clock.now += 29.9
    assert not gate.admits(9)
    assert gate.admits(10), "the minimum is there"
    clock.now += 29.9
    assert not gate.admits(3), "the delay counts from the last batch"
    clock.now += 0.1
    assert gate.admits(3), "the delay ran out"


def test_no_batch_without_rows_even_after_the_delay() -> None:
    clock = FakeClock()
    gate = MinRowsGate(5, max_delay=1.0, clock=clock)
    clock.now += 60

    assert not gate.admits(0)
    assert gate.admits(1)


def test_the_triggers_read_min_rows_wins_over_the_option() -> None:
    gate = MinRowsGate(10, max_delay=1e9, clock=FakeClock())

    assert gate.admits(4, min_rows=3)
    assert not gate.admits(4, min_rows=5)


@pytest.mark.parametrize(
    ("text", "seconds"), [("500ms", 0.5), ("30s", 30.0), ("15m", 900.0), ("1h", 3600.0)]
)
def test_max_trigger_delay_takes_kafkas_durations(text: str, seconds: float) -> None:
    parsed = SourceOptions.parse(
        {"uri": "amqp://h", "queue": "q", "minmessagespertrigger": "5", "maxtriggerdelay": text}
    )
    assert parsed.max_trigger_delay == seconds


def test_a_bad_max_trigger_delay_names_the_option_the_value_and_the_forms() -> None:
    with pytest.raises(OptionError, match=r"maxTriggerDelay.*'soon'.*'500ms', '30s', '15m'"):
        SourceOptions.parse(
            {
                "uri": "amqp://h",
                "queue": "q",
                "minmessagespertrigger": "5",
                "maxtriggerdelay": "soon",
            }
        )


EVERY_HALF_SECOND = {"processingTime": "500 milliseconds"}


def batch_sizes(queries: Queries, options: dict[str, str]) -> list[int]:
    """Starts a query with a 0.5 s trigger; the sizes of its non-empty batches, as they come."""
    sizes: list[int] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        if n := df.count():
            sizes.append(n)

    queries.start(options, queries.checkpoint(), sink, trigger=EVERY_HALF_SECOND)
    return sizes


@pytest.mark.spark
@pytest.mark.slow
def test_stream_batch_waits_for_min_messages_then_takes_them(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(4))
    opts = stream_options(broker, stream_queue, startingOffsets="first", minMessagesPerTrigger="10")
    sizes = batch_sizes(queries, opts)
    query = queries.started[-1]
    wait_until(lambda: len(query.recentProgress) >= 1, 120, "the query's first trigger")
    time.sleep(3)  # ~6 triggers with 4 messages there
    assert sizes == [], "a batch started below minMessagesPerTrigger"

    broker.publish(stream_queue, bodies(6, "more"))
    wait_until(lambda: sizes, 60, "a batch once 10 messages are there")
    assert sizes[0] == 10


@pytest.mark.spark
@pytest.mark.slow
def test_classic_batch_below_the_minimum_starts_after_max_trigger_delay(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(4))
    opts = classic_options(broker, queue, minMessagesPerTrigger="100", maxTriggerDelay="4s")
    started = time.monotonic()

    sizes = batch_sizes(queries, opts)

    wait_until(lambda: sizes, 120, "the delayed batch")
    assert sizes == [4]
    assert time.monotonic() - started >= 4


@pytest.mark.spark
@pytest.mark.slow
def test_an_available_now_run_reads_what_there_is_below_the_minimum(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(5))
    opts = stream_options(
        broker, stream_queue, startingOffsets="first", minMessagesPerTrigger="100"
    )

    rows, sizes = queries.collect_available_now(opts)

    assert sorted(r.body for r in rows) == bodies(5)
    assert sizes == [5]
