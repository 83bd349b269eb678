"""Stream filtering as RabbitMQ 3.13+ does it (Osiris's chunk filters), over AMQP 0-9-1.

A publisher tags a message with the header ``x-stream-filter-value`` (a string). Each chunk
of the log carries a Bloom filter of the filter values of its messages, where a message
without one counts as the empty string (so a chunk says whether it holds unfiltered
messages); as in Osiris, a chunk none of whose messages has a value carries no filter, and
holds unfiltered messages alone. A consumer that passes ``x-stream-filter`` (a string or
an array of strings) and optionally ``x-stream-match-unfiltered`` (true) is sent only the
chunks whose filter may hold one of its values (the empty string too when it matches
unfiltered ones). A chunk that matches is delivered whole, non-matching messages included,
so clients check each message again. No false negatives: a chunk holding a wanted value is
always delivered.

What RabbitMQ 4.0.5 does with odd arguments (measured with pika) and this module copies:
a filter that is neither a string nor an array is ignored (no filtering); an array's
non-string items are ignored, and an array with no string at all crashes the channel (the
client sees 541 INTERNAL_ERROR on the connection); ``x-stream-match-unfiltered`` counts only
when it is the boolean true; a published ``x-stream-filter-value`` that is not a string
closes the publisher's connection with 541.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FILTER_VALUE_HEADER = "x-stream-filter-value"
FILTER_ARGUMENT = "x-stream-filter"
MATCH_UNFILTERED_ARGUMENT = "x-stream-match-unfiltered"
#: The value a message without ``x-stream-filter-value`` counts as in a chunk's filter.
UNFILTERED = ""
#: Bytes of a chunk's Bloom filter: Osiris's default; the queue argument
#: ``x-stream-filter-size-bytes`` sets another in ``FILTER_BYTES_RANGE``.
FILTER_BYTES = 16
FILTER_BYTES_RANGE = range(16, 256)
_HASHES = 3


class InvalidFilter(ValueError):
    """An argument or header RabbitMQ crashes on (the client sees 541 INTERNAL_ERROR)."""


@functools.lru_cache(maxsize=4096)
def _bit_positions(value: str, bits: int) -> tuple[int, ...]:
    """The bits of ``value`` in a filter of ``bits`` (double hashing of a 64-bit digest)."""
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest()
    h1, h2 = int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:], "little") | 1
    return tuple((h1 + i * h2) % bits for i in range(_HASHES))


def chunk_filter(values: Iterable[str], size: int = FILTER_BYTES) -> bytes:
    """The Bloom filter (``size`` bytes) of a chunk whose messages have these values."""
    bits = 0
    for value in set(values):
        for position in _bit_positions(value, size * 8):
            bits |= 1 << position
    return bits.to_bytes(size, "little")


def may_contain(filter_bytes: bytes, value: str) -> bool:
    """Whether a chunk with this filter may hold a message with ``value``. A chunk without
    a filter holds unfiltered messages alone (Osiris writes none when no message has a
    filter value)."""
    if not filter_bytes:
        return value == UNFILTERED
    bits = int.from_bytes(filter_bytes, "little")
    return all(bits >> position & 1 for position in _bit_positions(value, len(filter_bytes) * 8))


def filter_value_of(headers: Mapping[str, Any] | None) -> str:
    """A published message's filter value (``UNFILTERED`` when it has none)."""
    value = (headers or {}).get(FILTER_VALUE_HEADER)
    if value is None:
        return UNFILTERED
    if not isinstance(value, str):
        raise InvalidFilter(f"{FILTER_VALUE_HEADER} is not a string: {value!r}")
    return value


@dataclass(frozen=True)
class ConsumerFilter:
    """What a filtered consumer asked for: the chunks that may hold one of ``values``."""

    values: tuple[str, ...]
    match_unfiltered: bool = False

    @property
    def wanted(self) -> tuple[str, ...]:
        return (*self.values, UNFILTERED) if self.match_unfiltered else self.values

    def matches_chunk(self, filter_bytes: bytes) -> bool:
        return any(may_contain(filter_bytes, value) for value in self.wanted)


def consumer_filter(arguments: Mapping[str, Any]) -> ConsumerFilter | None:
    """The filter in basic.consume's arguments, None when it asks for no filtering."""
    given = arguments.get(FILTER_ARGUMENT)
    if isinstance(given, str):
        values: tuple[str, ...] = (given,)
    elif isinstance(given, list):
        values = tuple(v for v in given if isinstance(v, str))
        if not values:
            raise InvalidFilter(f"{FILTER_ARGUMENT} holds no string: {given!r}")
    else:
        return None
    return ConsumerFilter(values, arguments.get(MATCH_UNFILTERED_ARGUMENT) is True)
