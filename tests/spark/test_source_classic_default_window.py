"""The default window of classic queues (no ``prefetch`` option): derived from the body sizes
seen, bounded in messages and in driver memory, grown by replacing consumers (or adding one
where the budget cannot hold the replaced ones' deliveries too), and never acking anything
before Spark commits. The policy is checked in-process; the growth on every broker
through the runner-side reader, with what it sends read off the wire."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.server_product import product_and_version
from amqp_spark.source.classic import driver_consumers
from amqp_spark.source.classic import window as window_module
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
from tests.spark.recording_proxy import BASIC_ACK, BASIC_CANCEL, RecordingProxy
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
    assert policy.next_window(window=16, seen=15, average_body=100) == 16
    assert policy.next_window(window=16, seen=16, average_body=100) == 16 * GROWTH


def test_the_window_stops_at_one_consumers_largest_before_passing_it() -> None:
    policy = DefaultWindow(budget_bytes=DEFAULT_WINDOW_BYTES, max_messages=200_000)
    assert policy.next_window(window=8192, seen=8192, average_body=100) == CONSUMER_PREFETCH_MAX
    window = CONSUMER_PREFETCH_MAX
    assert policy.next_window(window=window, seen=window, average_body=100) == 200_000


def test_the_window_stops_growing_at_its_target() -> None:
    policy = DefaultWindow(budget_bytes=10 * MiB)
    target = policy.target(10_000)
    assert policy.next_window(window=target, seen=10 * target, average_body=10_000) == target
    assert policy.next_window(window=target - 5, seen=target, average_body=10_000) == target


def test_deliveries_of_replaced_consumers_take_their_share_of_the_budget() -> None:
    policy = DefaultWindow(budget_bytes=10 * MiB)
    target = policy.target(10_000)
    assert policy.target(10_000, retired=5) == target - 5
    grown = policy.next_window(window=16, seen=16, average_body=10_000, retired=target - 20)
    assert grown == 20  # not 16 * GROWTH: the replaced consumers' deliveries are held too


def test_consumers_are_replaced_only_where_the_budget_holds_theirs_beside_the_new_window() -> None:
    policy = DefaultWindow(budget_bytes=10 * MiB)
    target = policy.target(10_000)
    assert policy.may_replace(
        retired=0, replaced=target // 4, window=target // 2, average_body=10_000
    )
    assert not policy.may_replace(retired=0, replaced=16, window=target, average_body=10_000)
    assert not policy.may_replace(
        retired=target // 2, replaced=1, window=target // 2 + 1, average_body=10_000
    )


def test_held_bytes_beyond_the_budget_are_over_it() -> None:
    policy = DefaultWindow(budget_bytes=10 * MiB)
    assert not policy.over_budget(held_bytes=6 * MiB, held=10)
    assert policy.over_budget(held_bytes=7 * MiB, held=10)


def _consumers(reader: MicroBatchReader) -> ClassicConsumers:
    state = reader._runner_state()
    assert isinstance(state, ClassicConsumers)
    return state


def _poll_until_held(
    reader: MicroBatchReader, start: dict[str, Any], queue: str, held: int
) -> dict[str, Any]:
    """``latestOffset`` (a processing-time trigger's, never waiting) until the queue's
    consumers hold ``held`` deliveries and their last step was answered."""
    consumers = _consumers(reader)
    end = start
    for _ in range(400):
        end = reader.latestOffset(start, ReadMaxRows(10**9))
        c = consumers._consumers[queue]
        if len(c.arrived) == held and c.settled():
            break
        time.sleep(0.05)
    return end


def _cancels(proxy: RecordingProxy) -> int:
    return method_ids(only_connection(proxy)).count(BASIC_CANCEL)


@dataclass
class _Growing:
    """A runner-side reader of a new queue holding ``bodies``, its default window replaced by
    ``policy``, that has started consuming."""

    queue: str
    reader: MicroBatchReader
    proxy: RecordingProxy
    consumers: ClassicConsumers
    start: dict[str, Any]

    @classmethod
    def of(
        cls,
        broker: Broker,
        runner_reader_of: ReaderFactory,
        bodies: list[bytes],
        policy: DefaultWindow,
    ) -> _Growing:
        queue = broker.new_queue()
        broker.publish(queue, bodies)
        reader, proxy = runner_reader_of(queue=queue)
        consumers = _consumers(reader)
        consumers._default_window = policy
        return cls(queue, reader, proxy, consumers, reader.initialOffset())


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


def test_the_default_window_grows_from_one_message_to_one_consumer_of_its_target_acking_nothing(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    policy = DefaultWindow(budget_bytes=DEFAULT_WINDOW_BYTES, max_messages=1000)
    g = _Growing.of(broker, runner_reader_of, [b"x" * 100] * 1500, policy)
    queue, reader, proxy, consumers, start = g.queue, g.reader, g.proxy, g.consumers, g.start
    # One message first, then at most GROWTH times more at each step: 1, 16, 256, 1000, each
    # step's consumer replacing the last, whose deliveries stay held until their batch is acked.
    held = 1 + 16 + 256 + 1000
    end = _poll_until_held(reader, start, queue, held)

    c = consumers._consumers[queue]
    assert [prefetch for _, prefetch in c.tags_and_prefetches] == [1000]
    assert (c.window, c.retired) == (1000, 1 + 16 + 256)
    assert _cancels(proxy) == 3
    assert end["deliveryTags"] == {queue: held}
    assert BASIC_ACK not in method_ids(only_connection(proxy))  # nothing acked before commit
    reader.commit(end)
    assert c.retired == 0  # theirs are acked: the budget holds the window alone again
    reader.stop()  # waits for close-ok: everything sent before is recorded
    assert [(tag, multiple) for _, tag, multiple in acks(only_connection(proxy))] == [(held, True)]
    assert ready_once_unconsumed(broker, queue) == 1500 - held  # the window beyond is requeued


def test_a_default_window_beyond_one_consumers_largest_is_made_of_full_consumers(
    broker: Broker, runner_reader_of: ReaderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    largest = 100  # one consumer's largest prefetch, made small so that the test stays small
    monkeypatch.setattr(driver_consumers, "CONSUMER_PREFETCH_MAX", largest)
    monkeypatch.setattr(window_module, "CONSUMER_PREFETCH_MAX", largest)
    policy = DefaultWindow(budget_bytes=DEFAULT_WINDOW_BYTES, max_messages=250)
    g = _Growing.of(broker, runner_reader_of, [b"x" * 100] * 400, policy)
    queue, reader, proxy, consumers, start = g.queue, g.reader, g.proxy, g.consumers, g.start
    # 1 and 16 are replaced by one consumer of 100; then two full ones are kept as they are.
    _poll_until_held(reader, start, queue, 1 + 16 + 250)

    c = consumers._consumers[queue]
    assert [prefetch for _, prefetch in c.tags_and_prefetches] == [100, 100, 50]
    assert c.window == 250
    assert _cancels(proxy) == 2


def test_the_default_window_of_large_messages_is_bounded_by_bytes(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    body = b"y" * 50_000
    policy = DefaultWindow(budget_bytes=3 * MiB)
    target = policy.target(len(body))
    assert 16 < target < 120  # one step of growth past the first message, and not all
    g = _Growing.of(broker, runner_reader_of, [body] * 120, policy)
    queue, reader, proxy, consumers, start = g.queue, g.reader, g.proxy, g.consumers, g.start
    end = _poll_until_held(reader, start, queue, target)
    for _ in range(10):  # and no more come
        end = reader.latestOffset(start, ReadMaxRows(10**9))
        time.sleep(0.05)

    c = consumers._consumers[queue]
    assert len(c.arrived) == target
    assert c.window + c.retired <= target  # the replaced first consumer's message counted
    assert c.held_bytes * 1.5 + target * DELIVERY_OVERHEAD <= policy.budget_bytes
    assert end["deliveryTags"] == {queue: target}
    assert BASIC_ACK not in method_ids(only_connection(proxy))


def test_the_default_window_falls_to_one_message_while_grown_messages_exceed_the_budget(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    policy = DefaultWindow(budget_bytes=2 * MiB, max_messages=1000)
    g = _Growing.of(broker, runner_reader_of, [b"s" * 10] * 300 + [b"L" * 200_000] * 20, policy)
    queue, reader, proxy, consumers, start = g.queue, g.reader, g.proxy, g.consumers, g.start
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
    assert [prefetch for _, prefetch in c.tags_and_prefetches] == [1]  # replacing the window
    assert c.window == 1
    assert BASIC_ACK not in method_ids(only_connection(proxy))
