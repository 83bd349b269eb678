"""What the stream protocol's commands do to the broker's model (streams, super streams,
statistics), as ``rabbit_stream_manager`` does it, and the codes they answer with. The
connection decodes and writes frames; this module decides the codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from amqp_protocol import errors
from amqp_protocol.generated.stream_codes import ResponseCode as Code

from ..model.exchanges import Exchange
from ..streams.chunk_filter import FILTER_ARGUMENT, MATCH_UNFILTERED_ARGUMENT
from ..streams.queue import StreamQueue

if TYPE_CHECKING:
    from .abc import Session

#: Create's arguments -> the queue argument and whether it is an integer (RabbitMQ's
#: ``stream_queue_arguments``); other arguments are ignored, as RabbitMQ ignores them.
STREAM_ARGUMENTS = {
    "max-length-bytes": ("x-max-length-bytes", True),
    "max-age": ("x-max-age", False),
    "stream-max-segment-size-bytes": ("x-stream-max-segment-size-bytes", True),
    "initial-cluster-size": ("x-initial-cluster-size", True),
    "queue-leader-locator": ("x-queue-leader-locator", False),
    "stream-filter-size-bytes": ("x-stream-filter-size-bytes", True),
}
SUPER_STREAM_ARGUMENT = "x-super-stream"
PARTITION_ORDER_ARGUMENT = "x-stream-partition-order"


def _valid_name(name: str) -> bool:
    """RabbitMQ's ``enforce_correct_name``: not empty, no control characters, not amq.*."""
    return bool(name) and not name.startswith("amq.") and all(ord(c) >= 0x20 for c in name)


def queue_arguments(arguments: dict[str, str]) -> dict[str, Any] | None:
    """The queue arguments of Create's ``arguments`` (None: a value that is not a number)."""
    out: dict[str, Any] = {"x-queue-type": "stream"}
    for name, value in arguments.items():
        known = STREAM_ARGUMENTS.get(name)
        if known is None:
            continue
        argument, integer = known
        if integer:
            try:
                out[argument] = int(value)
            except ValueError:
                return None
        else:
            out[argument] = value
    return out


def create_stream(conn: Session, name: str, arguments: dict[str, str]) -> Code:
    assert conn.vhost is not None
    if not _valid_name(name):
        return Code.PRECONDITION_FAILED
    if not conn.allowed("configure", name):
        return Code.ACCESS_REFUSED
    if name in conn.vhost.queues:
        return Code.STREAM_ALREADY_EXISTS
    args = queue_arguments(arguments)
    if args is None:
        return Code.PRECONDITION_FAILED
    try:
        conn.vhost.declare_queue(name, owner=conn, durable=True, arguments=args)
    except errors.AMQPError:
        return Code.PRECONDITION_FAILED
    return Code.OK


def delete_stream(conn: Session, name: str) -> Code:
    assert conn.vhost is not None
    if not conn.allowed("configure", name):
        return Code.ACCESS_REFUSED
    queue = conn.stream(name)
    if queue is None:
        return Code.STREAM_DOES_NOT_EXIST
    conn.vhost.delete_queue(queue)
    return Code.OK


def stream_stats(queue: StreamQueue) -> dict[str, int]:
    """Osiris's ``get_stats`` as RabbitMQ 4.0 reports it: the first chunk's id (its first
    offset) and the committed (last written) chunk's id; -1 for an empty stream."""
    log = queue.log
    last = log.last_chunk_offset
    if last is None:
        return {"first_chunk_id": -1, "committed_chunk_id": -1}
    return {"first_chunk_id": log.chunk_start(log.first_offset), "committed_chunk_id": last}


def filter_arguments(properties: dict[str, str]) -> dict[str, Any]:
    """Subscribe's ``filter.N`` and ``match-unfiltered`` properties as the consume
    arguments of stream filtering."""
    values = [v for k, v in sorted(properties.items()) if k.startswith("filter.")]
    if not values:
        return {}
    return {
        FILTER_ARGUMENT: values,
        MATCH_UNFILTERED_ARGUMENT: properties.get("match-unfiltered") == "true",
    }


def _super_stream(conn: Session, name: str) -> Exchange | None:
    assert conn.vhost is not None
    exchange = conn.vhost.exchanges.get(name)
    if exchange is None or not exchange.arguments.get(SUPER_STREAM_ARGUMENT):
        return None
    return exchange


def create_super_stream(
    conn: Session,
    name: str,
    partitions: list[str],
    binding_keys: list[str],
    arguments: dict[str, str],
) -> Code:
    vhost = conn.vhost
    assert vhost is not None
    if not _valid_name(name) or not partitions or len(partitions) != len(binding_keys):
        return Code.PRECONDITION_FAILED
    if not all(_valid_name(p) for p in partitions):
        return Code.PRECONDITION_FAILED
    if not all(conn.allowed("configure", n) for n in (name, *partitions)):
        return Code.ACCESS_REFUSED
    if name in vhost.exchanges or any(p in vhost.queues for p in partitions):
        return Code.STREAM_ALREADY_EXISTS
    args = queue_arguments(arguments)
    if args is None:
        return Code.PRECONDITION_FAILED
    try:
        vhost.declare_exchange(
            name, "direct", durable=True, arguments={SUPER_STREAM_ARGUMENT: True}
        )
        for order, (partition, key) in enumerate(zip(partitions, binding_keys, strict=True)):
            queue = vhost.declare_queue(partition, owner=conn, durable=True, arguments=args)
            vhost.bind(queue, name, key, {PARTITION_ORDER_ARGUMENT: order})
    except errors.AMQPError:
        delete_super_stream(conn, name, partitions)
        return Code.PRECONDITION_FAILED
    return Code.OK


def _ordered_partitions(exchange: Exchange) -> list[str]:
    bindings = sorted(
        exchange.bindings.items(), key=lambda item: item[1].get(PARTITION_ORDER_ARGUMENT, 0)
    )
    names: list[str] = []
    for (destination, _key, _hash), _args in bindings:
        if isinstance(destination, StreamQueue) and destination.name not in names:
            names.append(destination.name)
    return names


def delete_super_stream(conn: Session, name: str, partitions: list[str] | None = None) -> Code:
    vhost = conn.vhost
    assert vhost is not None
    if not conn.allowed("configure", name):
        return Code.ACCESS_REFUSED
    exchange = _super_stream(conn, name)
    if exchange is None and partitions is None:
        return Code.STREAM_DOES_NOT_EXIST
    names = partitions if exchange is None else _ordered_partitions(exchange)
    if exchange is not None:
        vhost.delete_exchange(name)
    for partition in names or ():
        queue = conn.stream(partition)
        if queue is not None:
            vhost.delete_queue(queue)
    return Code.OK


def partitions(conn: Session, name: str) -> tuple[Code, list[str]]:
    exchange = _super_stream(conn, name)
    if exchange is None:
        return Code.STREAM_DOES_NOT_EXIST, []
    streams = _ordered_partitions(exchange)
    if not all(conn.allowed("read", s) for s in streams):
        return Code.ACCESS_REFUSED, []
    return Code.OK, streams


def route(conn: Session, routing_key: str, name: str) -> tuple[Code, list[str]]:
    exchange = _super_stream(conn, name)
    if exchange is None:
        return Code.STREAM_DOES_NOT_EXIST, []
    assert conn.vhost is not None
    streams = [q.name for q in conn.vhost.route(exchange, routing_key, {})]
    return Code.OK, streams
