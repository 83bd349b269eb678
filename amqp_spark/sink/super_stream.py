"""Writing to a super stream: each row to one partition, as RabbitMQ's stream clients route.

The row is published to the super stream's exchange (a direct exchange, bound to each
partition with the partition's binding key), so over AMQP 0-9-1 the routing key sent *is*
the choice of partition. The row's ``routing_key`` (column or ``routingKey`` option) picks
it by one of the two strategies of RabbitMQ's stream clients (``superStreamRouting``):

* ``hash`` (default): MurmurHash3 (x86, 32-bit) of the key's UTF-8 bytes with seed 104729,
  as the Java client's ``HashUtils.MURMUR3``; partition ``(hash & 0x7FFFFFFF) % N`` of the
  partitions in ``x-stream-partition-order``, as its ``HashRoutingStrategy``. The message
  is published with that partition's binding key. (The Go client takes the unsigned hash
  modulo N instead, which differs for hashes of 2^31 and above unless N is a power of two:
  this sink follows the Java client, the one the JVM connectors use.)
* ``key``: the row's key is the binding key, as the clients' ``RoutingKeyRoutingStrategy``
  (for super streams made with ``--routing-keys``): the exchange routes it. A key that is
  no partition's binding key fails the task, naming the row and the keys accepted (the
  clients fail such a message too).

With ``hash`` the delivered message's routing key is the partition's binding key, not the
row's key (the stream clients do not keep the key either: they read it from the message);
keep the key in the body or a header when consumers need it.

The partitions are found once per executor Python worker (see
:mod:`amqp_spark.super_streams`) and kept for the worker's life.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from amqp_spark.super_streams import SuperStream, find

from .settings import SinkSettings

#: The seed every RabbitMQ stream client hashes routing keys with.
SEED = 104729
_MASK = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593

_layouts: dict[tuple[str, str, str | None], SuperStream] = {}


class RoutingError(ValueError):
    """A row that no partition takes; names the row, its key and the keys accepted."""


def murmur3_32(data: bytes, seed: int = SEED) -> int:
    """MurmurHash3 x86 32-bit of ``data`` (unsigned). Inlined: it runs once per distinct
    routing key of a batch."""
    h = seed & _MASK
    whole = len(data) // 4
    for k in struct.unpack_from(f"<{whole}I", data):
        k = (k * _C1) & _MASK
        k = (((k << 15) | (k >> 17)) * _C2) & _MASK
        h ^= k
        h = ((((h << 13) | (h >> 19)) & _MASK) * 5 + 0xE6546B64) & _MASK
    tail = data[whole * 4 :]
    if tail:
        k = (int.from_bytes(tail, "little") * _C1) & _MASK
        h ^= (((k << 15) | (k >> 17)) * _C2) & _MASK
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    return h ^ (h >> 16)


def hash_partition(routing_key: str, partitions: int) -> int:
    """The index of the partition a ``hash`` strategy sends ``routing_key`` to."""
    return (murmur3_32(routing_key.encode()) & 0x7FFFFFFF) % partitions


def layout_of(settings: SinkSettings) -> SuperStream:
    """The super stream's partitions, found once per worker."""
    from amqp_spark.client import connect

    name = settings.super_stream
    assert name is not None
    cache_key = (settings.uri, name, settings.management_url)
    layout = _layouts.get(cache_key)
    if layout is None:
        layout = _layouts[cache_key] = find(
            settings.uri, name, settings.management_url, lambda: connect(settings.uri)
        )
    return layout


def binding_keys(keys: Sequence[str], settings: SinkSettings, first_row: int) -> list[str]:
    """Per row, the routing key to publish with: the binding key of its partition."""
    layout = layout_of(settings)
    bound = [p.binding_key for p in layout.partitions]
    if settings.super_stream_routing == "key":
        accepted = set(bound)
        for row, key in enumerate(keys):
            if key not in accepted:
                raise RoutingError(
                    f"amqp sink: row {first_row + row} has routing key {key!r}, which is no "
                    f"binding key of super stream {layout.name!r} (superStreamRouting 'key' "
                    f"accepts {bound}); use superStreamRouting 'hash' to spread any key"
                )
        return list(keys)
    chosen = {key: bound[hash_partition(key, len(bound))] for key in set(keys)}
    return [chosen[key] for key in keys]
