"""Writing into a stream under the sink's producer names and publishing ids, and reading back
what a stream holds, over the stream protocol with rstream (an independent client)."""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import Sequence

from rstream import ConfirmationStatus, MessageContext, RawMessage

from amqp_protocol.amqp10 import to_amqp091
from amqp_spark.sink.stream_ids import PublishingIds, producer_name
from tests.protocol.amqp10.stream_client import TIMEOUT, StreamEndpoint

#: The query id the rows are written under.

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


def sequence_of(uri: str, stream: str, name: str) -> int:
    """The stream's QueryPublisherSequence answer for producer ``name``."""

    async def run() -> int:
        async with StreamEndpoint.parse(uri).producer() as producer:
            client = await producer.default_client
            return await client.query_publisher_sequence(stream=stream, reference=name)

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


def stored_messages(stream_uri: str, stream: str) -> list[bytes]:
    """Every message ``stream`` holds, as stored. An end marker is published first (under
    a producer name of its own) and the stream is read from its start up to it: what is
    stored before the marker is everything written before this call."""
    marker = f"end-{uuid.uuid4().hex}".encode()
    send(stream_uri, stream, [RawMessage(marker, publishing_id=1)], marker.decode())

    async def run() -> list[bytes]:
        stored: list[bytes] = []
        end = asyncio.Event()

        def on_message(message: bytes, _context: MessageContext) -> None:
            if message == marker:
                end.set()
            elif not end.is_set():
                stored.append(message)

        async with StreamEndpoint.parse(stream_uri).consumer() as consumer:
            await consumer.subscribe(stream, on_message)
            await end.wait()
        return stored

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT * 4))


def message_ids_in_stream(stream_uri: str, stream: str) -> collections.Counter[str]:
    """Each ``message_id`` of ``stream`` and how many times it is stored."""
    return collections.Counter(
        to_amqp091(message, stream).properties["message_id"]
        for message in stored_messages(stream_uri, stream)
    )
