"""Connection parameters from a ``rabbitmq-stream://`` URI, the scheme RabbitMQ's stream
clients use: ``rabbitmq-stream://user:password@host:port/vhost`` (port 5552), or
``rabbitmq-stream+tls://`` (port 5551). Like an ``amqp://`` URL (``client.addresses``) it
may name several hosts: ``rabbitmq-stream://user@node1:5552,node2:5552/vhost``.

Query parameters: ``heartbeat`` (seconds, 0 for none), ``frame_max`` (bytes, 0 for no
limit), ``connection_timeout`` (milliseconds), as in an ``amqp://`` URL.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from amqp_protocol.stream.connection import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT

from ..addresses import Address, parse_addresses

DEFAULT_PORTS = {"rabbitmq-stream": 5552, "rabbitmq-stream+tls": 5551}
DEFAULT_CONNECTION_TIMEOUT = 10.0
#: RabbitMQ refuses a frame_max below 8 bytes' worth of header; its clients ask for 1 MiB.
MIN_FRAME_MAX = 4096
ACCEPTED_PARAMS = ("heartbeat", "frame_max", "connection_timeout")


@dataclass(frozen=True)
class StreamParameters:
    """Where and how to connect. The password never appears in ``repr`` or ``str``."""

    host: str = "localhost"
    port: int = 5552
    virtual_host: str = "/"
    username: str = "guest"
    password: str = field(default="guest", repr=False)
    #: seconds asked for; the smaller of this and the server's (0: none) is used
    heartbeat: int = DEFAULT_HEARTBEAT
    #: bytes asked for; the smaller of this and the server's (0: no limit) is used
    frame_max: int = DEFAULT_FRAME_MAX
    #: seconds, for the TCP connect, the TLS handshake and the protocol handshake each
    connection_timeout: float = DEFAULT_CONNECTION_TIMEOUT
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def address(self) -> Address:
        return Address(self.host, self.port)

    def redacted_url(self) -> str:
        """The URI without the password, for messages and logs."""
        scheme = "rabbitmq-stream" if self.ssl_context is None else "rabbitmq-stream+tls"
        vhost = quote(self.virtual_host, safe="")
        return f"{scheme}://{quote(self.username, safe='')}@{self.address}/{vhost}"


def parse_stream_url(
    url: str, *, ssl_context: ssl.SSLContext | None = None
) -> tuple[StreamParameters, ...]:
    """The parameters of each host ``url`` names, in order (one for an ordinary URI).
    Raises ValueError naming what is wrong and what is accepted, never the password."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(
            f"unsupported URI scheme {parts.scheme!r}: use rabbitmq-stream:// or "
            "rabbitmq-stream+tls://"
        )
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user, has_password, password = userinfo.partition(":")
    addresses = parse_addresses(hosts or "localhost", DEFAULT_PORTS[scheme])
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if "/" in path:
        raise ValueError(f"the URI's path {path!r} has a '/': encode it in a vhost as %2F")
    query = _query(parts.query)
    if scheme == "rabbitmq-stream" and ssl_context is not None:
        raise ValueError("ssl_context was given for a rabbitmq-stream:// URI: use +tls")
    first = StreamParameters(
        host=addresses[0].host,
        port=addresses[0].port,
        virtual_host=unquote(path) or "/",
        username=unquote(user) if userinfo else "guest",
        password=unquote(password) if has_password else "guest",
        heartbeat=query.get("heartbeat", DEFAULT_HEARTBEAT),
        frame_max=query.get("frame_max", DEFAULT_FRAME_MAX),
        connection_timeout=query.get("connection_timeout", DEFAULT_CONNECTION_TIMEOUT * 1000)
        / 1000,
        ssl_context=(ssl_context or ssl.create_default_context())
        if scheme == "rabbitmq-stream+tls"
        else None,
    )
    if first.connection_timeout <= 0:
        raise ValueError("connection_timeout must be a positive number of milliseconds")
    if first.frame_max and first.frame_max < MIN_FRAME_MAX:
        raise ValueError(f"frame_max={first.frame_max} is below {MIN_FRAME_MAX} (0: no limit)")
    return tuple(replace(first, host=a.host, port=a.port) for a in addresses)


def _query(query: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in ACCEPTED_PARAMS:
            raise ValueError(
                f"unknown URI query parameter {name!r}; accepted: {', '.join(ACCEPTED_PARAMS)}"
            )
        if not value.isdigit():
            raise ValueError(f"{name}={value!r} is not a non-negative integer")
        values[name] = int(value)
    return values
