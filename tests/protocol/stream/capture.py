"""Record the stream-protocol frames rstream and a real RabbitMQ 4 exchange, for the
byte-for-byte tests: ``python -m tests.protocol.stream.capture OUT.json``.

It starts a private RabbitMQ 4 node with ``rabbitmq_stream`` (testbed), drives rstream
through the commands the connector uses (declare and delete streams and super streams,
publish with and without filter values and as sub-batches, deduplication, subscribe and
deliver, offsets, metadata, route, partitions, command versions) and writes every frame
of every connection, size prefix included, as hex: ``{"server_version": ..., "frames":
[{"connection": N, "from": "client"|"server", "hex": ...}, ...]}``. The checked-in
``rabbitmq_4_frames.json`` came from this script.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from rstream import (
    AMQPMessage,
    CompressionType,
    Consumer,
    MessageContext,
    Producer,
    RawMessage,
    connection,
    schema,
)
from rstream.client import Client
from rstream.constants import Key

from testbed.rabbitmq import STREAM_PLUGIN, RabbitMQNode, find_rabbitmq
from tests.protocol.amqp10.stream_client import StreamEndpoint

Frames = list[dict[str, Any]]


def record_frames(frames: Frames) -> None:
    """Make every rstream connection append its frames to ``frames``."""
    ids: dict[int, int] = {}
    write: Callable[..., Awaitable[None]] = connection.Connection._write_frame_raw
    read: Callable[..., Awaitable[bytearray]] = connection.Connection._read_frame_raw

    def number(conn: object) -> int:
        return ids.setdefault(id(conn), len(ids))

    async def recorded_write(self: connection.Connection, data: bytes) -> None:
        frames.append({"connection": number(self), "from": "client", "hex": bytes(data).hex()})
        await write(self, data)

    async def recorded_read(self: connection.Connection) -> bytearray:
        frame = await read(self)
        whole = len(frame).to_bytes(4, "big") + bytes(frame)
        frames.append({"connection": number(self), "from": "server", "hex": whole.hex()})
        return frame

    connection.Connection._write_frame_raw = recorded_write  # type: ignore[method-assign]
    connection.Connection._read_frame_raw = recorded_read  # type: ignore[method-assign]


async def drive(endpoint: StreamEndpoint) -> None:
    stream = "capture-stream"
    kwargs = dict(
        host=endpoint.host,
        port=endpoint.port,
        username=endpoint.username,
        password=endpoint.password,
        vhost=endpoint.vhost,
    )
    async with Producer(**kwargs) as producer:  # type: ignore[arg-type]
        await producer.create_stream(stream, arguments={"max-length-bytes": 10**9})
        await producer.send_wait(stream, RawMessage(b"first"), publisher_name="capture-pub")
        await producer.send_wait(stream, AMQPMessage(body=b"amqp body"))
        await producer.send_sub_entry(stream, [RawMessage(b"sub-a"), RawMessage(b"sub-b")])
        await producer.send_sub_entry(
            stream, [AMQPMessage(body=b"gz-1"), AMQPMessage(body=b"gz-2")], CompressionType.Gzip
        )
        await asyncio.sleep(1.5)
        client: Client = await producer.default_client
        await client.query_publisher_sequence(stream, "capture-pub")
        await client.exchange_command_version(schema.FrameHandlerInfo(Key.Publish.value, 1, 2))
        partitions = ["capture-super-0", "capture-super-1"]
        await client.create_super_stream("capture-super", partitions, ["0", "1"], {})
        await client.partitions("capture-super")
        await client.route("1", "capture-super")
        await client.delete_super_stream("capture-super")

    async def filter_value(message: Any) -> str:
        return "red"

    async with Producer(filter_value_extractor=filter_value, **kwargs) as filtered:  # type: ignore[arg-type]
        await filtered.send_wait(stream, RawMessage(b"filtered"))

    received: list[bytes] = []
    enough = asyncio.Event()

    def on_message(message: bytes, context: MessageContext) -> None:
        received.append(message)
        if len(received) >= 7:
            enough.set()

    async with Consumer(**kwargs) as consumer:  # type: ignore[arg-type]
        await consumer.subscribe(stream, on_message, decoder=lambda b: b)
        await asyncio.wait_for(enough.wait(), 30)
        await consumer.store_offset(stream, "capture-reader", 3)
        await asyncio.sleep(0.5)
        await consumer.query_offset(stream, "capture-reader")
        await consumer.delete_stream(stream)


def main(out: str) -> None:
    install = find_rabbitmq(4)
    if install is None:
        raise SystemExit("no RabbitMQ 4 installed: bash scripts/install-rabbitmq4.sh")
    frames: Frames = []
    record_frames(frames)
    with RabbitMQNode(install, plugins=(STREAM_PLUGIN,)) as node:
        asyncio.run(asyncio.wait_for(drive(StreamEndpoint.parse(node.stream_url)), 120))
        version = node.ctl("version").strip()
    with open(out, "w") as f:
        json.dump({"server_version": version, "frames": frames}, f, indent=0)
        f.write("\n")
    print(f"{len(frames)} frames from RabbitMQ {version} -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
