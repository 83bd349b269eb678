"""The ``x-stream-offset`` consumer argument and the ``x-max-age`` queue argument, parsed
as RabbitMQ 3.10 parses them (``rabbit_stream_queue:parse_offset_arg`` and
``rabbit_amqqueue:check_max_age``).

RabbitMQ's interval syntax is digits then one unit, ``Y`` (365 days), ``M`` (30 days),
``D``, ``h``, ``m`` or ``s``; zero is refused. A string that does not start with a digit
makes RabbitMQ 3.10 crash the channel process (the client sees a connection close with
541 INTERNAL_ERROR); we report the same error so clients cannot tell the difference.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

_UNIT_MS = {
    "Y": 365 * 86_400_000,
    "M": 30 * 86_400_000,
    "D": 86_400_000,
    "h": 3_600_000,
    "m": 60_000,
    "s": 1_000,
}
_INTERVAL = re.compile(r"([0-9]*)(.*)", re.DOTALL)


class InvalidInterval(ValueError):
    """The string is not an interval RabbitMQ accepts (reply: 406 ``invalid_max_age``)."""


class CrashesRabbitMQ(ValueError):
    """A value RabbitMQ 3.10 fails on internally (an interval without leading digits, a
    boolean offset): the client sees the connection closed with 541 INTERNAL_ERROR."""


class InvalidOffsetSpec(ValueError):
    """``x-stream-offset`` has a value RabbitMQ refuses; ``term`` is how RabbitMQ prints it
    in the 406 reply text."""

    def __init__(self, term: str) -> None:
        super().__init__(term)
        self.term = term


def interval_ms(text: str) -> int:
    """Milliseconds in a RabbitMQ interval such as ``"7D"`` or ``"30s"``."""
    match = _INTERVAL.fullmatch(text)
    assert match is not None  # the pattern matches every string
    digits, unit = match.groups()
    if not digits:
        raise CrashesRabbitMQ(text)
    value = int(digits)
    if value == 0 or unit not in _UNIT_MS:
        raise InvalidInterval(text)
    return value * _UNIT_MS[unit]


@dataclass(frozen=True)
class OffsetSpec:
    """Where a stream consumer starts: ``kind`` is ``first``, ``last``, ``next``,
    ``offset`` (``value`` is the offset) or ``timestamp`` (``value`` in ms since the epoch)."""

    kind: str
    value: int = 0


NEXT = OffsetSpec("next")


def parse_offset_spec(value: Any, now_ms: int) -> OffsetSpec:
    """The start a consumer asked for; ``value`` is the decoded ``x-stream-offset`` (None
    when absent). An interval is relative to ``now_ms``."""
    if value is None:
        return NEXT
    if isinstance(value, bool):
        raise CrashesRabbitMQ(repr(value))  # what RabbitMQ 3.10 does with a boolean
    if isinstance(value, int):
        return OffsetSpec("offset", max(value, 0))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return OffsetSpec("timestamp", int(value.timestamp()) * 1000)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        if value in ("first", "last", "next"):
            return OffsetSpec(value)
        try:
            return OffsetSpec("timestamp", now_ms - interval_ms(value))
        except InvalidInterval:
            raise InvalidOffsetSpec(f'{{longstr,<<"{value}">>}}') from None
    raise InvalidOffsetSpec(repr(value))
