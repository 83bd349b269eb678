"""Stream-protocol connections to one of several nodes, and connecting again.

A ``streamUri`` names one node or several, as a ``uri`` with ``addresses`` does::

    rabbitmq-stream://user:password@node1:5552,node2:5552,node3:5552/vhost

Unset, it is every host of the ``uri`` (with ``addresses``, each address's host) on port
5552 (``default_stream_uri``). ``connect_stream`` tries the nodes in the order this process's
rotation of them gives (``client.addresses.Rotation``: the node that answered last first, the
next one after a connection to it was lost) and returns the first connection that opens;
``open_stream`` makes ``1 + attempts`` such passes with the 0-9-1 client's doubling pause
(``client.backoff``), so ``maxReconnectAttempts`` means the same over both protocols.

A stream is served by every node of its replicas: a subscription reads on the node it is
made on (the leader or a replica), and a publisher declared on any node writes through it to
the stream's leader (RabbitMQ's ``lookup_leader``), so no node needs to be the leader. What
ends a connection or a subscription without ending what it does (``is_transient``): the
connection lost, the broker silent past the client's timeout, and ``STREAM_NOT_AVAILABLE``
(a stream whose leader died, until another is elected; RabbitMQ sends it as a
``MetadataUpdate`` and as a response code).
"""

from __future__ import annotations

import functools
import time
import urllib.parse
from collections.abc import Callable
from typing import TypeVar

from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_spark.client import backoff
from amqp_spark.client.addresses import Address, parse_addresses, rotation_for
from amqp_spark.client.exceptions import ClientError, ClientTimeout
from amqp_spark.options import redact_uri

from .connection import (
    DEFAULT_STREAM_PORT,
    DEFAULT_STREAM_TLS_PORT,
    TLS_SCHEME,
    StreamClient,
    StreamConnectionLost,
    StreamEndpoint,
    StreamError,
)

T = TypeVar("T")

#: Response codes of a stream that is there but has no leader for a moment.
TRANSIENT_CODES = frozenset({ResponseCode.STREAM_NOT_AVAILABLE})


class NoStreamNodeAnswered(StreamConnectionLost):
    """No node of a ``streamUri`` could be connected to; says each node tried and why."""


def stream_endpoints(uri: str) -> tuple[StreamEndpoint, ...]:
    """The nodes a ``rabbitmq-stream://`` URI names, in order (duplicates dropped); each
    with the URI's credentials and vhost. Raises ValueError naming what is wrong."""
    parts = urllib.parse.urlsplit(uri)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if "," not in hosts:
        return (StreamEndpoint.parse(uri),)
    tls = parts.scheme == TLS_SCHEME
    nodes = parse_addresses(hosts, DEFAULT_STREAM_TLS_PORT if tls else DEFAULT_STREAM_PORT)
    return tuple(
        StreamEndpoint.parse(parts._replace(netloc=f"{userinfo}{at}{node}").geturl())
        for node in nodes
    )


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` ends a connection or a stream's service for a while only (see the
    module docstring): another connection, maybe to another node, may do what it could not."""
    if isinstance(error, StreamError):
        return error.code in TRANSIENT_CODES
    return isinstance(error, StreamConnectionLost | ClientTimeout)


def connect_stream(uri: str, *, timeout: float = 30.0) -> StreamClient:
    """A connection to the first node of ``uri`` that answers, in this process's rotation
    order; a connection lost later moves the rotation on. ``NoStreamNodeAnswered`` when no
    node answers. Other refusals (authentication, vhost) are the broker's answer: raised."""
    endpoints = stream_endpoints(uri)
    by_address = {Address(e.host, e.port): e for e in endpoints}
    rotation = rotation_for(by_address)
    failures: list[str] = []
    for address in rotation.order():
        try:
            client = StreamClient(by_address[address], timeout=timeout)
        except (StreamConnectionLost, ClientTimeout, OSError) as e:
            failures.append(f"{address}: {e}")
            continue
        rotation.answered(address)
        client.on_lost = functools.partial(rotation.lost, address)
        return client
    raise NoStreamNodeAnswered(
        f"stream protocol: no node answered ({len(failures)} tried): {'; '.join(failures)}"
    )


def open_stream(
    uri: str,
    attempts: int,
    purpose: str,
    setup: Callable[[StreamClient], T],
    *,
    timeout: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[StreamClient, T]:
    """A connection to a node of ``uri`` and what ``setup`` (a subscription, publishers)
    made on it, trying ``1 + attempts`` passes over the nodes, the doubling pause between
    them. Tried again: no node answering, the connection lost during ``setup``, and a stream
    with no leader yet (``is_transient``); any other error of ``setup`` is final. The error
    names ``purpose``, ``uri`` (password redacted), the attempts and the last cause."""
    last_error: BaseException | None = None
    for _ in backoff.attempts(attempts, sleep):
        try:
            client = connect_stream(uri, timeout=timeout)
        except NoStreamNodeAnswered as e:
            last_error = e
            continue
        try:
            return client, setup(client)
        except (ClientError, OSError) as e:
            client.close(move_on=True)
            if not is_transient(e):
                raise
            last_error = e
        except BaseException:
            client.close()
            raise
    raise StreamConnectionLost(
        f"{purpose}: cannot use the stream protocol at {redact_uri(uri)} after "
        f"{attempts + 1} attempt(s): {last_error}. Check 'streamUri' (or 'uri' and "
        "'addresses') and that the broker is up; 'maxReconnectAttempts' sets how often to retry."
    ) from last_error


def nothing(client: StreamClient) -> None:
    """A ``setup`` that sets nothing up: ``open_stream`` for the connection alone."""
