"""The default window of classic queues (no ``prefetch`` option): derived from the body sizes
seen, bounded in messages and in driver memory, grown by adding consumers, and never acking
anything before Spark commits. The policy is checked in-process; the growth on every broker
through the runner-side reader, with what it sends read off the wire."""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.server_product import product_and_version
from amqp_spark.source.classic.driver_consumers import ClassicConsumers
from amqp_spark.source.classic.window import (
    BUNDLED_BROKER_WINDOW_MESSAGES,
    DEFAULT_WINDOW_BYTES,
    DEFAULT_WINDOW_MESSAGES,
    DELIVERY_OVERHEAD,
    GROWTH,
    DefaultWindow,
    window_messages_for,
)
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.options import CONSUMER_PREFETCH_MAX
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, ReaderFactory
from tests.spark.recording_proxy import BASIC_ACK
from tests.spark.test_source_classic_runner import acks, method_ids, only_connection

MiB = 2**20


def test_small_messages_get_the_full_count_of_the_default_window() -> None:
    policy = DefaultWindow.for_queues(1)
    assert policy.target(100) == DEFAULT_WINDOW_MESSAGES


def test_the_bundled_broker_gets_a_larger_default_window_than_any_other_broker() -> None:
    assert BUNDLED_BROKER_WINDOW_MESSAGES > DEFAULT_WINDOW_MESSAGES
    bundled = {"product": "amqp-spark broker", "version": "0.1.0"}
    assert window_messages_for(bundled) == BUNDLED_BROKER_WINDOW_MESSAGES
    for other in (
        {"product": b"RabbitMQ", "version": b"4.0.5"},
        {"product": "RabbitMQ", "version": "3.10.0"},
        {"product": "LavinMQ"},
        {},
    ):
        assert window_messages_for(other) == DEFAULT_WINDOW_MESSAGES, other


def test_the_larger_window_of_small_messages_fits_the_memory_budget() -> None:
    policy = DefaultWindow.for_queues(1, BUNDLED_BROKER_WINDOW_MESSAGES)
    assert policy.target(100) == BUNDLED_BROKER_WINDOW_MESSAGES
    assert policy.target(10_000) == DefaultWindow.for_queues(1).target(10_000)  # bytes bound


def test_large_messages_get_a_window_bounded_by_the_memory_budget() -> None:
    policy = DefaultWindow.for_queues(1)
    window = policy.target(1 * MiB)
    assert window == DEFAULT_WINDOW_BYTES // (DELIVERY_OVERHEAD + 1.5 * MiB)
    assert 0 < window < 100
    # What that window holds, the Arrow copy of a batch included, stays within the budget.
    assert window * (DELIVERY_OVERHEAD + 1.5 * MiB) <= DEFAULT_WINDOW_BYTES


def test_a_message_larger_than_the_budget_still_gets_a_window_of_one() -> None:
    assert DefaultWindow.for_queues(1).target(DEFAULT_WINDOW_BYTES) == 1


def test_the_queues_of_a_query_share_the_memory_budget() -> None:
    one, four = DefaultWindow.for_queues(1), DefaultWindow.for_queues(4)
    assert four.budget_bytes == one.budget_bytes // 4
    assert four.target(10_000) < one.target(10_000)


def test_the_window_grows_only_after_seeing_as_many_deliveries_as_it_holds() -> None:
    policy = DefaultWindow(budget_bytes=DEFAULT_WINDOW_BYTES)
    assert policy.next_share(window=16, seen=15, average_body=100) == 0
    assert policy.next_share(window=16, seen=16, average_body=100) == 16 * GROWTH - 16


def test_one_consumer_takes_at_most_what_basic_qos_can_say() -> None:
    policy = DefaultWindow(budget_bytes=DEFAULT_WINDOW_BYTES, max_messages=200_000)
    assert policy.next_share(window=150_000, seen=150_000, average_body=100) == 50_000
    assert policy.next_share(window=8192, seen=8192, average_body=100) == CONSUMER_PREFETCH_MAX


def test_the_window_stops_growing_at_its_target() -> None:
    policy = DefaultWindow(budget_bytes=10 * MiB)
    target = policy.target(10_000)
    assert policy.next_share(window=target, seen=10 * target, average_body=10_000) == 0
    assert policy.next_share(window=target - 5, seen=target, average_body=10_000) == 5


def test_held_bytes_beyond_the_budget_are_over_it() -> None:
    policy = DefaultWindow(budget_bytes=10 * MiB)
    assert not policy.over_budget(held_bytes=6 * MiB, held=10)
    assert policy.over_budget(held_bytes=7 * MiB, held=10)


def _consumers(reader: MicroBatchReader) -> ClassicConsumers:
    state = reader._runner_state()
    assert isinstance(state, ClassicConsumers)
    return state


def _poll_until_window(
    reader: MicroBatchReader, start: dict[str, Any], queue: str, window: int
) -> dict[str, Any]:
    """``latestOffset`` (a processing-time trigger's, never waiting) until the queue's
    consumers have grown to ``window`` and filled it."""
    consumers = _consumers(reader)
    end = start
    for _ in range(400):
        end = reader.latestOffset(start, ReadMaxRows(10**9))
        c = consumers._consumers[queue]
        if c.window == window and len(c.arrived) == window and c.settled():
            break
        time.sleep(0.05)
    return end


def test_the_default_window_is_chosen_from_the_broker_at_connect(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    reader, _ = runner_reader_of(queue=broker.new_queue())
    reader.initialOffset()  # connects and starts consuming

    policy = _consumers(reader)._default_window
    assert policy is not None
    product, _ = product_and_version(broker.conn.server_properties)
    expected = 131_070 if product == "amqp-spark broker" else 40_000
    assert policy.target(100) == expected


def test_the_default_window_grows_from_one_message_to_its_target_acking_nothing(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, [b"x" * 100] * 1500)
    reader, proxy = runner_reader_of(queue=queue)
    consumers = _consumers(reader)
    consumers._default_window = DefaultWindow(budget_bytes=DEFAULT_WINDOW_BYTES, max_messages=1000)
    start = reader.initialOffset()
    end = _poll_until_window(reader, start, queue, 1000)

    c = consumers._consumers[queue]
    assert (c.window, len(c.arrived)) == (1000, 1000)
    # One message first, then at most GROWTH times more at each step: 1, 16, 256, 1000.
    assert [prefetch for _, prefetch in c.tags_and_prefetches] == [1, 15, 240, 744]
    assert end["deliveryTags"] == {queue: 1000}
    assert BASIC_ACK not in method_ids(only_connection(proxy))  # nothing acked before commit
    reader.commit(end)
    reader.stop()  # waits for close-ok: everything sent before is recorded
    assert [(tag, multiple) for _, tag, multiple in acks(only_connection(proxy))] == [(1000, True)]
    assert ready_once_unconsumed(broker, queue) == 500  # the window beyond it is requeued


def test_the_default_window_of_large_messages_is_bounded_by_bytes(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    body = b"y" * 50_000
    broker.publish(queue, [body] * 120)
    reader, proxy = runner_reader_of(queue=queue)
    consumers = _consumers(reader)
    policy = DefaultWindow(budget_bytes=3 * MiB)
    consumers._default_window = policy
    target = policy.target(len(body))
    assert 16 < target < 120  # one step of growth past the first message, and not all
    start = reader.initialOffset()
    end = _poll_until_window(reader, start, queue, target)

    c = consumers._consumers[queue]
    assert (c.window, len(c.arrived)) == (target, target)
    assert c.held_bytes * 1.5 + target * DELIVERY_OVERHEAD <= policy.budget_bytes
    assert end["deliveryTags"] == {queue: target}
    assert BASIC_ACK not in method_ids(only_connection(proxy))


def test_the_default_window_cancels_consumers_while_grown_messages_exceed_the_budget(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, [b"s" * 10] * 300 + [b"L" * 200_000] * 20)
    reader, proxy = runner_reader_of(queue=queue)
    consumers = _consumers(reader)
    policy = DefaultWindow(budget_bytes=2 * MiB, max_messages=1000)
    consumers._default_window = policy
    start = reader.initialOffset()
    c = consumers._consumers[queue]
    for _ in range(400):  # grows to 1000 on the small ones, then holds 4 MB of large ones
        reader.latestOffset(start, ReadMaxRows(10**9))
        if len(c.arrived) == 320 and len(c.tags_and_prefetches) == 1 and c.settled():
            break
        time.sleep(0.05)

    for _ in range(20):  # and it does not grow again while they are held
        reader.latestOffset(start, ReadMaxRows(10**9))
        time.sleep(0.05)

    assert len(c.arrived) == 320  # nothing held is dropped: it is acked with its batch
    assert policy.over_budget(c.held_bytes, len(c.arrived))
    assert [prefetch for _, prefetch in c.tags_and_prefetches] == [1]  # the others cancelled
    assert c.window == 1
    assert BASIC_ACK not in method_ids(only_connection(proxy))
