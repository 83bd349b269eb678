"""The amqps listener: an ``ssl.SSLContext`` from the ``[tls]`` settings, and the verified
client certificate's common name (the EXTERNAL mechanism's user name)."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import Any

from .config import TLSConfig

log = logging.getLogger("broker.tls")

#: Seconds a client has to finish the TLS handshake.
TLS_HANDSHAKE_TIMEOUT = 10.0


def server_context(tls: TLSConfig) -> ssl.SSLContext:
    """TLS 1.2+ with the configured certificate; client certificates are requested when
    ``verify = "verify_peer"`` and required when ``fail_if_no_peer_cert`` too."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(tls.certfile, tls.keyfile)
    if tls.verify == "verify_peer":
        assert tls.cacertfile is not None  # TLSConfig checks it
        context.load_verify_locations(cafile=tls.cacertfile)
        context.verify_mode = ssl.CERT_REQUIRED if tls.fail_if_no_peer_cert else ssl.CERT_OPTIONAL
    return context


async def listen(
    protocol_factory: Callable[[], asyncio.Protocol],
    host: str,
    tls: TLSConfig | None,
    loop: asyncio.AbstractEventLoop,
) -> asyncio.Server | None:
    """Start the amqps listener (None when the config has no ``[tls]``)."""
    if tls is None:
        return None
    server = await loop.create_server(
        protocol_factory,
        host,
        tls.port,
        ssl=server_context(tls),
        ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT,
    )
    log.info("broker listening for AMQPS on %s:%d", host, bound_port(server))
    return server


def bound_port(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


def peer_common_name(transport: asyncio.BaseTransport) -> str | None:
    """The subject common name of the client certificate the handshake verified, if any."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    cert: Any = ssl_object.getpeercert()
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None
