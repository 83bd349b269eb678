"""RabbitMQ's stream protocol from the tests, through rstream (the reference client): publish
messages as given (bytes, or rstream's own AMQP 1.0 messages) and read them back as the
bytes the broker stores, one call each, with every wait bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rstream import AMQPMessage, Consumer, MessageContext, Producer, RawMessage

from amqp_spark.client import stream as client_stream

#: How long one publish or read may take.
TIMEOUT = 30.0


class StreamEndpoint(client_stream.StreamEndpoint):
    """Where a ``rabbitmq-stream://`` URI points, with rstream's clients of it."""

    def producer(self) -> Producer:
        return Producer(
            self.host,
            self.port,
            username=self.username,
            password=self.password,
            vhost=self.vhost,
        )

    def consumer(self) -> Consumer:
        return Consumer(
            self.host,
            self.port,
            username=self.username,
            password=self.password,
            vhost=self.vhost,
        )


def publish(uri: str, stream: str, messages: Sequence[bytes | AMQPMessage]) -> None:
    """Publish ``messages`` (bytes go as stored, unchanged) to ``stream``, creating it if
    needed, and wait for every confirm."""

    async def run() -> None:
        async with StreamEndpoint.parse(uri).producer() as producer:
            await producer.create_stream(stream, exists_ok=True)
            for message in messages:
                sent = RawMessage(message) if isinstance(message, bytes) else message
                await producer.send_wait(stream, sent)

    asyncio.run(asyncio.wait_for(run(), TIMEOUT))


def read_stored(uri: str, stream: str, count: int) -> list[bytes]:
    """The first ``count`` messages of ``stream`` as the broker stores them (the AMQP 1.0
    message bytes of each chunk entry)."""

    async def run() -> list[bytes]:
        received: list[bytes] = []
        enough = asyncio.Event()

        def on_message(message: bytes, _context: MessageContext) -> None:
            received.append(message)
            if len(received) >= count:
                enough.set()

        async with StreamEndpoint.parse(uri).consumer() as consumer:
            await consumer.subscribe(stream, on_message)
            await enough.wait()
        return received[:count]

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


def delete(uri: str, stream: str) -> None:
    async def run() -> None:
        async with StreamEndpoint.parse(uri).producer() as producer:
            await producer.delete_stream(stream, missing_ok=True)

    asyncio.run(asyncio.wait_for(run(), TIMEOUT))
