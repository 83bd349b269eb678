"""A super stream's layout, as RabbitMQ 4 declares it, and how a client finds it.

``rabbitmq-streams add_super_stream invoices --partitions 3`` (measured on 4.0.5) declares a
durable direct exchange ``invoices`` with the argument ``x-super-stream: true``, durable
stream queues ``invoices-0`` .. ``invoices-2`` (``x-queue-type: stream``,
``x-queue-leader-locator: balanced``) and a binding from the exchange to each, with routing
key ``0`` .. ``2`` and the *binding* argument ``x-stream-partition-order`` 0 .. 2. With
``--routing-keys amer,emea,apac`` the queues are ``invoices-amer`` .. and the binding keys
are the given keys, in the order given (``x-stream-partition-order`` 0, 1, 2).

AMQP 0-9-1 has no call that lists bindings. The partitions and their order are found:

* through the management HTTP API when ``managementUrl`` is given and answers: the exchange
  (which must carry ``x-super-stream``) and its bindings to queues, ordered by
  ``x-stream-partition-order``. This finds both forms and is authoritative: a 404 there is
  an error, not a reason to guess.
* otherwise by the naming of the ``--partitions`` form: passive declares of the exchange,
  then of ``<name>-0``, ``<name>-1``, ... until one is not found; partition ``i``'s binding
  key is ``"i"``. A super stream made with ``--routing-keys`` cannot be found this way (its
  keys are not known): the error says to give ``managementUrl``.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from amqp_spark.options import OptionError, redact_uri

if TYPE_CHECKING:
    from amqp_spark.client import Connection

log = logging.getLogger("amqp_spark.super_streams")

#: The exchange argument that marks a super stream, and the binding argument ordering it.
SUPER_STREAM_ARGUMENT = "x-super-stream"
PARTITION_ORDER_ARGUMENT = "x-stream-partition-order"
#: The most partitions the naming search tries (RabbitMQ puts no limit; a bound keeps a
#: wrong name from looping).
MAX_PARTITIONS_BY_NAMING = 10_000
#: Seconds a management API request may take before the naming is used instead.
MANAGEMENT_TIMEOUT = 10.0

ACCEPTED = "the name of a super stream (its exchange, with x-super-stream and partition bindings)"


@dataclass(frozen=True)
class Partition:
    """One partition: its stream queue and the binding key routing to it."""

    stream: str
    binding_key: str


@dataclass(frozen=True)
class SuperStream:
    """A super stream's partitions in partition order, and how they were found."""

    name: str
    partitions: tuple[Partition, ...]
    found_by: str  #: "management API" or "naming"

    @property
    def streams(self) -> tuple[str, ...]:
        return tuple(p.stream for p in self.partitions)


#: Connections the lookup by naming may lose before it gives up.
NAMING_ATTEMPTS = 3


def find(
    uri: str,
    name: str,
    management_url: str | None,
    connect: Callable[[], Connection],
) -> SuperStream:
    """The layout of super stream ``name`` on the broker of ``uri``: through the management
    API at ``management_url`` when given and reachable, else by naming over AMQP through a
    connection ``connect`` opens (and this closes; another one if it is lost on the way, at
    most NAMING_ATTEMPTS in all)."""
    if management_url is not None:
        try:
            return from_management(uri, name, management_url)
        except OSError as e:
            log.warning(
                "amqp: the management API at %s did not answer (%s): super stream %r is "
                "found by naming (%s-0, %s-1, ...)",
                redact_uri(management_url),
                e,
                name,
                name,
                name,
            )
    from amqp_spark.client import ConnectionClosed

    lost: ConnectionClosed | None = None
    for _ in range(NAMING_ATTEMPTS):
        conn = connect()
        try:
            return by_naming(conn, name)
        except ConnectionClosed as e:
            # The node went away during the lookup (a node of a cluster that dies): the
            # next connection reaches another (addresses rotate).
            lost = e
        finally:
            conn.close()
    assert lost is not None  # NAMING_ATTEMPTS > 0: every attempt returned or lost
    raise lost


def from_management(uri: str, name: str, management_url: str) -> SuperStream:
    """The layout from the management API: the exchange's ``x-super-stream`` argument and
    its bindings to queues ordered by ``x-stream-partition-order``. Raises OSError when the
    API cannot be reached, OptionError when it says there is no such super stream."""
    from amqp_spark.client.parameters import parse_url

    params = parse_url(uri)
    # A login in the URL is the API's (urllib would take it for part of the host).
    parts = urlsplit(management_url)
    user = unquote(parts.username) if parts.username is not None else params.username
    password = unquote(parts.password) if parts.password is not None else params.password
    base = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl().rstrip("/")
    base = base.removesuffix("/api")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    vhost = quote(params.virtual_host, safe="")
    exchange_path = f"/api/exchanges/{vhost}/{quote(name, safe='')}"

    def get(path: str) -> Any:
        request = urllib.request.Request(
            base + path, headers={"Authorization": f"Basic {token}"}, method="GET"
        )
        try:
            with urllib.request.urlopen(request, timeout=MANAGEMENT_TIMEOUT) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise _not_found(name, f"the management API has no exchange {name!r}") from None
            raise OSError(f"GET {path} answered {e.code} {e.reason}") from None

    exchange = get(exchange_path)
    if exchange.get("arguments", {}).get(SUPER_STREAM_ARGUMENT) is not True:
        raise _not_found(name, f"exchange {name!r} has no '{SUPER_STREAM_ARGUMENT}: true' argument")
    ordered = sorted(
        (b["arguments"][PARTITION_ORDER_ARGUMENT], b["destination"], b["routing_key"])
        for b in get(exchange_path + "/bindings/source")
        if b.get("destination_type") == "queue"
        and PARTITION_ORDER_ARGUMENT in (b.get("arguments") or {})
    )
    if not ordered:
        raise _not_found(name, f"exchange {name!r} has no partition bindings")
    partitions = tuple(Partition(stream, key) for _, stream, key in ordered)
    return SuperStream(name, partitions, "management API")


def by_naming(conn: Connection, name: str) -> SuperStream:
    """The layout of a ``--partitions`` super stream from its naming: the exchange must
    exist, then ``<name>-0``, ``<name>-1``, ... are declared passively until one is not
    found (each refusal closes its channel)."""
    from amqp_spark.client import ChannelClosed

    try:
        conn.channel().exchange_declare(name, passive=True)
    except ChannelClosed as e:
        raise _not_found(name, f"the broker says: {e.reply_text}") from e
    partitions: list[Partition] = []
    for index in range(MAX_PARTITIONS_BY_NAMING):
        stream = f"{name}-{index}"
        try:
            conn.channel().queue_declare(stream, passive=True)
        except ChannelClosed:
            break
        partitions.append(Partition(stream, str(index)))
    if not partitions:
        raise _not_found(
            name,
            f"exchange {name!r} exists but queue {name}-0 does not: a super stream made "
            "with --routing-keys is found only through the management API (set "
            "'managementUrl')",
        )
    return SuperStream(name, tuple(partitions), "naming")


def _not_found(name: str, why: str) -> OptionError:
    return OptionError("superStream", name, ACCEPTED, why)


def describe(layout: SuperStream, uri: str) -> str:
    """One line for the logs."""
    parts = ", ".join(f"{p.stream} (key {p.binding_key!r})" for p in layout.partitions)
    return f"super stream {layout.name!r} on {redact_uri(uri)}, by {layout.found_by}: {parts}"
