"""What the stream writer's exactly-once design relies on, checked on RabbitMQ 4 with rstream
(the reference client) sending the sink's own producer names and publishing ids
(``amqp_spark.sink.stream_ids``): a retried task, a replayed batch, the next batch with fewer
rows, one name on two streams (super stream partitions) and on two connections at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from amqp_spark.sink.stream_ids import PublishingIds, producer_name
from tests.protocol.amqp10.stream_client import TIMEOUT, StreamEndpoint, delete
from tests.spark.stream_dedup_client import QUERY, rows, send, stored_messages

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def streams(rabbitmq_stream_url: str) -> Iterator[list[str]]:
    names = [f"sink-dedup-{uuid.uuid4().hex[:8]}" for _ in range(2)]

    async def create() -> None:
        async with StreamEndpoint.parse(rabbitmq_stream_url).producer() as producer:
            for name in names:
                await producer.create_stream(name)

    asyncio.run(asyncio.wait_for(create(), TIMEOUT))
    yield names
    for name in names:
        delete(rabbitmq_stream_url, name)


def test_retried_task_and_replayed_batch_store_every_row_once(
    rabbitmq_stream_url: str, streams: list[str]
) -> None:
    uri, stream, name = rabbitmq_stream_url, streams[0], producer_name(QUERY, 0)
    ids = PublishingIds(name, 3)
    # The first attempt of the task of batch 3 dies after 40 of its 100 rows.
    _, sequence = send(uri, stream, rows(3, 0, 40, "a"), name)
    assert ids.rows_in_stream(sequence) == 40
    # The retry sends all 100: the 40 are dropped, yet confirmed like the others.
    confirmed, sequence = send(uri, stream, rows(3, 0, 100, "b"), name)
    assert confirmed == 100 and ids.rows_in_stream(sequence) == 100
    # The query restarts before the commit: batch 3 is replayed whole.
    send(uri, stream, rows(3, 0, 100, "c"), name)
    # Batch 4 has fewer rows than batch 3: its ids are still above.
    send(uri, stream, rows(4, 0, 7, "d"), name)
    stored = [m.decode() for m in stored_messages(uri, stream)]
    expected = [f"3:{r}:a" for r in range(40)] + [f"3:{r}:b" for r in range(40, 100)]
    assert stored == [*expected, *(f"4:{r}:d" for r in range(7))]


def test_one_name_is_tracked_per_stream_and_across_connections_at_once(
    rabbitmq_stream_url: str, streams: list[str]
) -> None:
    uri, name = rabbitmq_stream_url, producer_name(QUERY, 1)
    send(uri, streams[0], rows(0, 0, 50, "a"), name)
    # The same name on another stream (another super stream partition) starts afresh.
    send(uri, streams[1], rows(0, 0, 20, "a"), name)

    async def both() -> None:  # a speculative copy of the task, on its own connection
        await asyncio.gather(
            asyncio.to_thread(send, uri, streams[1], rows(0, 0, 60, "b"), name),
            asyncio.to_thread(send, uri, streams[1], rows(0, 0, 60, "c"), name),
        )

    asyncio.run(both())
    for stream, count in ((streams[0], 50), (streams[1], 60)):
        stored = [m.decode() for m in stored_messages(uri, stream)]
        assert [int(m.split(":")[1]) for m in stored] == list(range(count))
