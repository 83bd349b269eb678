"""RabbitMQ's stream protocol from the tests, through rstream (the reference client): publish
messages as given (bytes, or rstream's own AMQP 1.0 messages) and read them back as the
bytes the broker stores, one call each, with every wait bounded."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from rstream import AMQPMessage, Consumer, MessageContext, Producer, RawMessage

#: How long one publish or read may take.
TIMEOUT = 30.0


@dataclass(frozen=True)
class StreamEndpoint:
    """Where a ``rabbitmq-stream://user:password@host:port/vhost`` URI points."""

    host: str
    port: int
    username: str
    password: str
    vhost: str

    @classmethod
    def parse(cls, uri: str) -> StreamEndpoint:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != "rabbitmq-stream" or parts.hostname is None or parts.port is None:
            raise ValueError(f"not a rabbitmq-stream://user:password@host:port/vhost URI: {uri!r}")
        return cls(
            host=parts.hostname,
            port=parts.port,
            username=urllib.parse.unquote(parts.username or "guest"),
            password=urllib.parse.unquote(parts.password or "guest"),
            vhost=urllib.parse.unquote(parts.path[1:]) or "/",
        )

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
