"""The client is thread-safe: threads share one channel for publishing and for requests."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from amqp_spark.client import Channel
from tests.client.conftest import message_count

pytestmark = pytest.mark.timeout(120)
THREADS = 4


def run_threads(target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # re-raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]


def test_threads_publishing_on_one_channel_get_distinct_sequence_numbers(
    channel: Channel, queue: str
) -> None:
    channel.confirm_select()
    channel.max_in_flight = 50
    seqs: list[list[int]] = [[] for _ in range(THREADS)]

    def publish(i: int) -> None:
        for n in range(2500):
            seqs[i].append(channel.basic_publish("", queue, b"%d-%d" % (i, n)))

    run_threads(publish)
    channel.wait_for_confirms()
    assert sorted(s for per_thread in seqs for s in per_thread) == list(range(1, 10_001))
    assert all(per_thread == sorted(per_thread) for per_thread in seqs)
    assert message_count(channel, queue) == 10_000


def test_threads_sharing_a_channel_each_get_their_own_replies(channel: Channel) -> None:
    names: list[set[str]] = [set() for _ in range(THREADS)]

    def declare(i: int) -> None:
        for n in range(100):
            name = f"threads-{i}-{n}"
            assert channel.queue_declare(name, exclusive=True).queue == name
            names[i].add(name)
            assert channel.queue_purge(name) == 0

    run_threads(declare)
    assert all(len(per_thread) == 100 for per_thread in names)
