"""Which protocol reads a query's streams (``streamProtocol``), and where the stream
protocol is served (``streamUri``, by default derived from the ``uri``).

Decided once, where the reader is made (the driver): ``auto`` opens one stream-protocol
connection and reads over the stream protocol when it opens, else over AMQP 0-9-1, and
logs one line saying which and why. A ``filterValues`` query is read over 0-9-1 (the stream
protocol's filtering is not done yet; ``streamProtocol`` 'stream' with it is refused at
``load()``).
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit, urlunsplit

from amqp_spark.client.addresses import Address, parse_addresses
from amqp_spark.source.options import SourceOptions

log = logging.getLogger("amqp_spark.source")

#: How long ``auto`` waits for the stream port to answer before choosing 0-9-1.
PROBE_TIMEOUT = 3.0
_STREAM_SCHEMES = {"amqp": ("rabbitmq-stream", 5552), "amqps": ("rabbitmq-stream+tls", 5551)}


def default_stream_uri(uri: str) -> str:
    """The ``rabbitmq-stream://`` URI of the broker(s) ``uri`` names: the same hosts, user,
    password and vhost, on the stream protocol's port; the ``amqp`` query parameters are
    not carried over (their meanings differ)."""
    parts = urlsplit(uri)
    scheme, port = _STREAM_SCHEMES[parts.scheme.lower()]
    userinfo, at, hosts = parts.netloc.rpartition("@")
    addresses = parse_addresses(hosts, port)
    netloc = f"{userinfo}{at}{','.join(str(Address(a.host, port)) for a in addresses)}"
    return urlunsplit((scheme, netloc, parts.path, "", ""))


def stream_uri_of(options: SourceOptions) -> str:
    """The stream protocol's URI for ``options``: ``streamUri``, else from the ``uri``."""
    return options.stream_uri or default_stream_uri(options.uri)


def stream_protocol_uri(options: SourceOptions) -> str | None:
    """The URI to read ``options``' streams from over the stream protocol, or None to read
    them over AMQP 0-9-1 (see the module docstring)."""
    from amqp_spark.client.stream import StreamError, connect, parse_stream_url

    if options.stream_protocol == "amqp":
        return None
    uri = stream_uri_of(options)
    shown = parse_stream_url(uri)[0].redacted_url()
    if options.stream_protocol == "stream":
        log.info("amqp source: reading streams over the stream protocol at %s", shown)
        return uri
    if options.filter_values:
        log.info(
            "amqp source: reading streams over AMQP 0-9-1 (streamProtocol auto): filterValues "
            "is not yet supported over the stream protocol"
        )
        return None
    try:
        connect(uri, connection_timeout=PROBE_TIMEOUT).close()
    except (StreamError, OSError) as e:
        log.info(
            "amqp source: reading streams over AMQP 0-9-1 (streamProtocol auto): the stream "
            "protocol does not answer at %s: %s",
            shown,
            e,
        )
        return None
    log.info(
        "amqp source: reading streams over the stream protocol at %s (streamProtocol auto: "
        "it answered)",
        shown,
    )
    return uri
