"""Connection parameters from an ``amqp://`` / ``amqps://`` URL.

The URL follows RabbitMQ's URI spec (https://www.rabbitmq.com/uri-spec.html) and the query
parameters its clients define (https://www.rabbitmq.com/docs/uri-query-parameters):
``heartbeat`` (seconds), ``connection_timeout`` (milliseconds), ``frame_max``,
``channel_max``, ``auth_mechanism``, and for ``amqps`` ``cacertfile``, ``certfile``,
``keyfile``, ``verify`` (``verify_peer`` / ``verify_none``), ``server_name_indication``.

A URL may name several hosts (``amqp://user@node1:5672,node2:5672/vhost``, see
``addresses``): ``parse_url_hosts`` gives the parameters of each.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from amqp_protocol import frames

from .addresses import Address, split_hosts

DEFAULT_PORTS = {"amqp": 5672, "amqps": 5671}
DEFAULT_FRAME_MAX = 131072
DEFAULT_CHANNEL_MAX = 2047
DEFAULT_CONNECTION_TIMEOUT = 10.0
MECHANISMS = ("PLAIN", "AMQPLAIN")
#: With a client certificate (``certfile``) or on request (``auth_mechanism=external``): the
#: TLS client certificate is the identity.
EXTERNAL = "EXTERNAL"

_INT_PARAMS = ("heartbeat", "frame_max", "channel_max", "connection_timeout")
_TLS_PARAMS = ("cacertfile", "certfile", "keyfile", "verify", "server_name_indication")
ACCEPTED_PARAMS = (*_INT_PARAMS, "auth_mechanism", *_TLS_PARAMS)
_VERIFY = ("verify_peer", "verify_none")


@dataclass(frozen=True)
class ConnectionParameters:
    """Where and how to connect. The password never appears in ``repr`` or ``str``."""

    host: str = "localhost"
    port: int = 5672
    virtual_host: str = "/"
    username: str = "guest"
    password: str = field(default="guest", repr=False)
    #: seconds; None: accept the server's proposal; 0: no heartbeats
    heartbeat: int | None = None
    #: 0 means no limit (the spec's meaning) on both sides
    frame_max: int = DEFAULT_FRAME_MAX
    channel_max: int = DEFAULT_CHANNEL_MAX
    #: seconds, for the TCP connect, the TLS handshake and the AMQP handshake each
    connection_timeout: float = DEFAULT_CONNECTION_TIMEOUT
    mechanisms: tuple[str, ...] = MECHANISMS  #: SASL mechanisms we may use, preferred first
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    server_hostname: str | None = None  #: TLS SNI and the name the certificate must match

    @property
    def address(self) -> Address:
        return Address(self.host, self.port)

    @property
    def scheme(self) -> str:
        return "amqp" if self.ssl_context is None else "amqps"

    def redacted_url(self) -> str:
        """The URL without the password, for messages and logs."""
        vhost = self.virtual_host.replace("%", "%25").replace("/", "%2F")
        return f"{self.scheme}://{self.username}@{self.host}:{self.port}/{vhost}"


def with_credentials(url: str, username: str | None, password: str | None) -> str:
    """``url`` with ``username`` and ``password`` instead of its own (each None: the URL's
    own is kept; a password without a user in the URL is guest's, as ``parse_url`` reads
    it). Percent-encoded, so any character may be in them; every host of a URL naming
    several (``addresses``) shares them."""
    if username is None and password is None:
        return url
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    own_user, colon, own_password = userinfo.partition(":")
    user = quote(username, safe="") if username is not None else (own_user or "guest")
    if password is not None:
        userinfo = f"{user}:{quote(password, safe='')}"
    else:
        userinfo = f"{user}{colon}{own_password}"
    return parts._replace(netloc=f"{userinfo}@{hosts}").geturl()


def parse_url_hosts(
    url: str, *, ssl_context: ssl.SSLContext | None = None
) -> tuple[ConnectionParameters, ...]:
    """The parameters of each host ``url`` names, in order (one for an ordinary URL). Each
    host's TLS server name is its own unless ``server_name_indication`` names one."""
    first, addresses = split_hosts(url)
    params = parse_url(first, ssl_context=ssl_context)
    if addresses is None:
        return (params,)
    named = any(name == "server_name_indication" for name, _ in parse_qsl(urlsplit(url).query))
    return tuple(
        replace(
            params,
            host=a.host,
            port=a.port,
            server_hostname=params.server_hostname if named else a.host,
        )
        for a in addresses
    )


def parse_url(url: str, *, ssl_context: ssl.SSLContext | None = None) -> ConnectionParameters:
    """Parse an AMQP URI (of a URL naming several hosts, the first one's parameters: the
    others differ only in host and port, see ``parse_url_hosts``). ``ssl_context`` (amqps
    only) replaces the context the TLS query parameters would build. Raises ValueError
    naming what is wrong, never the password."""
    url, _ = split_hosts(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"unsupported URL scheme {parts.scheme!r}: use amqp:// or amqps://")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise ValueError("the URL's port is not a number in 0-65535") from None
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if "/" in path:
        raise ValueError(f"the URL's path {path!r} has a '/': encode it in a vhost as %2F")
    query = _query(parts.query, scheme)
    params = ConnectionParameters(
        host=unquote(parts.hostname or "") or "localhost",
        port=port,
        # The URI spec makes "amqp://h/" the vhost "", which no broker has: "/" as in pika.
        virtual_host=unquote(path) or "/",
        username=unquote(parts.username) if parts.username is not None else "guest",
        password=unquote(parts.password) if parts.password is not None else "guest",
        heartbeat=query.get("heartbeat"),
        frame_max=query.get("frame_max", DEFAULT_FRAME_MAX),
        channel_max=query.get("channel_max", DEFAULT_CHANNEL_MAX),
        connection_timeout=(
            query["connection_timeout"] / 1000
            if "connection_timeout" in query
            else DEFAULT_CONNECTION_TIMEOUT
        ),
        mechanisms=_mechanisms(query.get("auth_mechanism"), "certfile" in query),
        ssl_context=(ssl_context or _ssl_context(query)) if scheme == "amqps" else None,
        server_hostname=query.get("server_name_indication") or parts.hostname,
    )
    if scheme == "amqp" and ssl_context is not None:
        raise ValueError("ssl_context was given for an amqp:// URL: use amqps://")
    if scheme == "amqp" and params.mechanisms == (EXTERNAL,):
        raise ValueError(
            "auth_mechanism=external authenticates with the TLS client certificate: use "
            f"amqps:// with certfile and keyfile, or one of {MECHANISMS} over amqp://"
        )
    if params.connection_timeout <= 0:
        raise ValueError("connection_timeout must be a positive number of milliseconds")
    if params.frame_max and params.frame_max < frames.FRAME_MIN_SIZE:
        raise ValueError(
            f"frame_max={params.frame_max} is below the protocol's minimum "
            f"{frames.FRAME_MIN_SIZE} (0 means no limit)"
        )
    return params


def _query(query: str, scheme: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if name not in ACCEPTED_PARAMS:
            raise ValueError(
                f"unknown URL query parameter {name!r}; accepted: {', '.join(ACCEPTED_PARAMS)}"
            )
        if name in _TLS_PARAMS and scheme != "amqps":
            raise ValueError(f"URL query parameter {name!r} needs an amqps:// URL")
        if name in _INT_PARAMS:
            try:
                values[name] = int(value)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not an integer") from None
            if values[name] < 0:
                raise ValueError(f"{name}={value!r} is negative")
        elif name == "verify" and value not in _VERIFY:
            raise ValueError(f"verify={value!r}: use {' or '.join(_VERIFY)}")
        else:
            values[name] = value
    return values


def _mechanisms(auth_mechanism: str | None, client_certificate: bool) -> tuple[str, ...]:
    """The mechanisms asked for, else those we can handle: EXTERNAL too with a client
    certificate (``sasl.choose_mechanism`` then prefers it, rule start-ok.mechanism:security)."""
    if auth_mechanism is None:
        return (EXTERNAL, *MECHANISMS) if client_certificate else MECHANISMS
    accepted = (*MECHANISMS, EXTERNAL)
    if auth_mechanism.upper() not in accepted:
        raise ValueError(f"auth_mechanism={auth_mechanism!r}: supported are {accepted}")
    return (auth_mechanism.upper(),)


def tls_of_query(query: str) -> tuple[ssl.SSLContext, str | None]:
    """The TLS context and the server name to ask for of a URL query that holds TLS
    parameters only (``cacertfile``, ``certfile``, ``keyfile``, ``verify``,
    ``server_name_indication``), read as in an amqps URL: a ``rabbitmq-stream+tls://`` URI's.
    Raises ValueError naming what is wrong."""
    values = _query(query, "amqps")
    others = sorted(set(values) - set(_TLS_PARAMS))
    if others:
        raise ValueError(
            f"URL query parameter(s) {', '.join(others)} not taken here; accepted: "
            f"{', '.join(_TLS_PARAMS)}"
        )
    return _ssl_context(values), values.get("server_name_indication")


def tls_query(url: str) -> str:
    """The TLS parameters of ``url``'s query, as a query (the rest left out)."""
    kept = [(k, v) for k, v in parse_qsl(urlsplit(url).query) if k in _TLS_PARAMS]
    return urlencode(kept)


def _ssl_context(query: Mapping[str, str]) -> ssl.SSLContext:
    """TLS as the query says: the system's trust store unless ``cacertfile`` is given, a client
    certificate with ``certfile``/``keyfile``, and peer verification unless ``verify_none``."""
    context = ssl.create_default_context(cafile=query.get("cacertfile"))
    if "certfile" in query:
        context.load_cert_chain(query["certfile"], query.get("keyfile"))
    elif "keyfile" in query:
        raise ValueError("keyfile given without certfile")
    if query.get("verify") == "verify_none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
