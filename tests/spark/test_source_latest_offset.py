"""``latestOffset`` answers from what the runner already holds: Spark calls it about 70 times
a second on an idle stream, so it must not cost a network round trip. Checked by counting the
bytes the reader's connection sends to the broker through a loopback proxy."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_reader import AMQPStreamReader
from tests.spark import test_source_stream_queues as streams
from tests.spark.conftest import Broker
from tests.spark.counting_proxy import CountingProxy

stream_queue = streams.stream_queue
CALLS = 300


@pytest.fixture
def runner_reader_of(broker: Broker) -> Iterator[Any]:
    """Builds the runner-side reader as Spark's source runner does, connected through a
    counting proxy (heartbeats off: they are the only frames the client sends unasked)."""
    previous = signal.getsignal(signal.SIGTERM)  # the reader installs a SIGTERM handler
    made: list[tuple[AMQPStreamReader, CountingProxy]] = []

    def make(**options: str) -> tuple[AMQPStreamReader, CountingProxy]:
        proxy = CountingProxy(broker.url)
        uri = proxy.url + ("&" if "?" in proxy.url else "?") + "heartbeat=0"
        reader = AMQPStreamReader(SourceOptions.parse({"uri": uri, **options}))
        made.append((reader, proxy))
        return reader, proxy

    yield make
    for reader, proxy in made:
        reader.stop()
        proxy.close()
    signal.signal(signal.SIGTERM, previous)


def latest_after_many_calls(reader: AMQPStreamReader, start: dict[str, Any]) -> Any:
    """``latestOffset`` called CALLS times, a millisecond apart; the last answer."""
    end = None
    for _ in range(CALLS):
        end = reader.latestOffset(start, ReadMaxRows(1000))
        time.sleep(0.001)
    return end


def test_latest_offset_of_classic_queues_sends_nothing_to_the_broker(
    broker: Broker, runner_reader_of: Any
) -> None:
    queue = broker.new_queue()
    reader, proxy = runner_reader_of(queue=queue, prefetch="100")
    start = reader.initialOffset()  # connects and starts consuming
    broker.publish(queue, [b"x"] * 20)
    sent_before = proxy.sent_to_server

    end = latest_after_many_calls(reader, start)
    for _ in range(30):  # deliveries still on their way on a loaded machine
        if end["deliveryTags"][queue] == 20:
            break
        end = latest_after_many_calls(reader, start)

    assert end["deliveryTags"] == {queue: 20}  # it saw the deliveries that arrived meanwhile
    assert proxy.sent_to_server == sent_before


def test_latest_offset_of_stream_queues_sends_nothing_once_the_tail_is_idle(
    broker: Broker, runner_reader_of: Any, stream_queue: str
) -> None:
    broker.publish(stream_queue, [b"x"] * 20)
    reader, proxy = runner_reader_of(queue=stream_queue, queueType="stream")
    start = reader.initialOffset()  # connects, follows the tail until it settles
    sent_before = proxy.sent_to_server

    end = latest_after_many_calls(reader, start)

    assert end["queues"] == {stream_queue: 20}
    assert proxy.sent_to_server == sent_before
