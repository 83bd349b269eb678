"""The stream protocol over TLS, with the ``[tls]`` section's certificate (``stream_port``):
rstream publishes and reads back through it."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from rstream import Consumer, MessageContext, Producer

from broker import Broker
from tests.security.certs import CertificateAuthority


async def _round_trip(port: int, context: ssl.SSLContext) -> list[bytes]:
    options = {"username": "guest", "password": "guest", "ssl_context": context}
    async with Producer("127.0.0.1", port, **options) as producer:  # type: ignore[arg-type]
        await producer.create_stream("over-tls", exists_ok=True)
        await producer.send_wait("over-tls", b"secret")
    received: list[bytes] = []
    done = asyncio.Event()

    def on_message(message: bytes, _context: MessageContext) -> None:
        received.append(message)
        done.set()

    async with Consumer("127.0.0.1", port, **options) as consumer:  # type: ignore[arg-type]
        await consumer.subscribe("over-tls", on_message)
        await done.wait()
    return received


def test_rstream_over_the_tls_stream_listener(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("localhost", server=True)
    tls = {"certfile": str(server.cert), "keyfile": str(server.key), "stream_port": 0}
    with Broker(config={"tls": {**tls, "port": 0}}) as b:
        context = ssl.create_default_context(cafile=str(ca.cert))
        context.check_hostname = False
        got = asyncio.run(asyncio.wait_for(_round_trip(b.stream_tls_port, context), 30))
    assert got == [b"secret"]
