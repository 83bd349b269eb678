"""``latestOffset`` answers from what the runner already holds: Spark calls it about 70 times
a second on an idle stream, so it must not cost a network round trip. Checked by counting the
bytes the reader's connection sends to the broker through a loopback proxy."""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.source.micro_batch import MicroBatchReader
from tests.spark.conftest import Broker, ReaderFactory

CALLS = 300


def latest_after_many_calls(reader: MicroBatchReader, start: dict[str, Any]) -> Any:
    """``latestOffset`` called CALLS times, a millisecond apart; the last answer."""
    end = None
    for _ in range(CALLS):
        end = reader.latestOffset(start, ReadMaxRows(1000))
        time.sleep(0.001)
    return end


def test_latest_offset_of_classic_queues_sends_nothing_to_the_broker(
    broker: Broker, runner_reader_of: ReaderFactory
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
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    broker.publish(stream_queue, [b"x"] * 20)
    reader, proxy = runner_reader_of(queue=stream_queue, queueType="stream")
    start = reader.initialOffset()  # connects, follows the tail until it settles
    sent_before = proxy.sent_to_server

    end = latest_after_many_calls(reader, start)

    assert end["queues"] == {stream_queue: 20}
    assert proxy.sent_to_server == sent_before
