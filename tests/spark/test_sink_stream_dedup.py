"""What the stream writer's exactly-once design relies on, checked on RabbitMQ 4 with rstream
(the reference client) sending the sink's own producer names and publishing ids
(``amqp_spark.sink.stream_ids``): a retried task, a replayed batch, the next batch with fewer
rows, one name on two streams (super stream partitions) and on two connections at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence

import pytest
from rstream import ConfirmationStatus, RawMessage

from amqp_spark.sink.stream_ids import PublishingIds, producer_name
from tests.protocol.amqp10.stream_client import TIMEOUT, StreamEndpoint, delete, read_stored

pytestmark = pytest.mark.rabbitmq

QUERY = str(uuid.UUID(int=7))


def rows(batch: int, start: int, count: int, attempt: str) -> list[RawMessage]:
    """Rows ``start``.. of a partition of ``batch``, under the sink's publishing ids; the
    body names the row and the attempt that sent it."""
    ids = PublishingIds(producer_name(QUERY, 0), batch).for_rows(start, count)
    return [
        RawMessage(f"{batch}:{start + i}:{attempt}".encode(), publishing_id=pid)
        for i, pid in enumerate(ids)
    ]


def send(uri: str, stream: str, messages: Sequence[RawMessage], name: str) -> tuple[int, int]:
    """Publish under producer ``name`` on a connection of its own, as a task does; returns
    (messages confirmed, the stream's sequence for ``name`` afterwards)."""

    async def run() -> tuple[int, int]:
        confirmed: list[bool] = []
        done = asyncio.Event()

        async def on_confirm(status: ConfirmationStatus) -> None:
            confirmed.append(status.is_confirmed)
            if len(confirmed) == len(messages):
                done.set()

        async with StreamEndpoint.parse(uri).producer() as producer:
            await producer.send_batch(
                stream, list(messages), publisher_name=name, on_publish_confirm=on_confirm
            )
            await done.wait()
            sequence = await (await producer.default_client).query_publisher_sequence(
                stream=stream, reference=name
            )
        assert all(confirmed)
        return len(confirmed), sequence

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


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
    # A last message of another producer: what is stored before it is all there is.
    send(uri, stream, [RawMessage(b"end", publishing_id=1)], "end")
    stored = [m.decode() for m in read_stored(uri, stream, 108)]
    expected = [f"3:{r}:a" for r in range(40)] + [f"3:{r}:b" for r in range(40, 100)]
    assert stored == [*expected, *(f"4:{r}:d" for r in range(7)), "end"]


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
        send(uri, stream, [RawMessage(b"end", publishing_id=1)], "end")
        stored = [m.decode() for m in read_stored(uri, stream, count + 1)]
        assert [int(m.split(":")[1]) for m in stored[:-1]] == list(range(count))
        assert stored[-1] == "end"
