"""Where a stream-queue read starts: the ``startingOffsets`` option as a small typed value.

``first | last | next | at(timestamp) | offsets(per queue)``; per queue, one of the first
four or an exact offset (:class:`Exactly`), queues left out starting at ``next``. The JSON
form (:func:`to_json`) is what the option takes, so ``parse(to_json(s)) == s``:
``"first"``, ``"2024-05-01T12:00:00+00:00"``, ``{"orders": 42, "refunds": "first"}``.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from amqp_spark.options import Parser, Refused


@dataclass(frozen=True)
class _Keyword:
    KEYWORD: ClassVar[str]

    def to_json(self) -> str:
        return self.KEYWORD


@dataclass(frozen=True)
class First(_Keyword):
    """The first message the stream still holds."""

    KEYWORD = "first"


@dataclass(frozen=True)
class Last(_Keyword):
    """The last message written before the query starts."""

    KEYWORD = "last"


@dataclass(frozen=True)
class Next(_Keyword):
    """Only messages written after the query starts."""

    KEYWORD = "next"


@dataclass(frozen=True)
class At:
    """The first chunk written at or after ``timestamp`` (timezone-aware)."""

    timestamp: datetime.datetime

    def to_json(self) -> str:
        return self.timestamp.isoformat()


@dataclass(frozen=True)
class Exactly:
    """A stream offset (capped at the stream's end)."""

    offset: int

    def to_json(self) -> int:
        return self.offset


#: Where one queue starts.
QueueStart = First | Last | Next | At | Exactly


@dataclass(frozen=True)
class Offsets:
    """Per queue where it starts; queues left out start at :class:`Next`."""

    per_queue: Mapping[str, QueueStart]

    def to_json(self) -> dict[str, Any]:
        return {queue: start.to_json() for queue, start in sorted(self.per_queue.items())}


#: The value of ``startingOffsets``.
StartingOffsets = First | Last | Next | At | Offsets


def for_queue(starting: StartingOffsets, queue: str) -> QueueStart:
    """Where ``queue`` starts."""
    if isinstance(starting, Offsets):
        return starting.per_queue.get(queue, Next())
    return starting


def to_json(starting: StartingOffsets) -> str:
    """The option's text for ``starting``."""
    form = starting.to_json()
    return json.dumps(form, sort_keys=True) if isinstance(form, dict) else form


ACCEPTED = (
    "'first', 'last', 'next', an ISO-8601 timestamp such as '2024-05-01T12:00:00Z', or a JSON "
    'object per queue such as \'{"orders": 42, "refunds": "first"}\''
)
_KEYWORDS: dict[str, First | Last | Next] = {k.KEYWORD: k for k in (First(), Last(), Next())}


def _everywhere(text: str) -> First | Last | Next | At:
    """A keyword or a timestamp (no timezone: UTC)."""
    keyword = _KEYWORDS.get(text.strip().lower())
    if keyword is not None:
        return keyword
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise Refused() from None
    return At(moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc))


def _queue_start(value: object) -> QueueStart:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return Exactly(value)
    if isinstance(value, str):
        return _everywhere(value)
    raise Refused()


def parse(text: str) -> StartingOffsets:
    """``text`` as the option gives it; raises Refused."""
    if not text.strip().startswith("{"):
        return _everywhere(text)
    try:
        per_queue = json.loads(text)
    except ValueError:
        raise Refused("it is not valid JSON") from None
    if not isinstance(per_queue, dict) or not per_queue:
        raise Refused()
    return Offsets({queue: _queue_start(value) for queue, value in per_queue.items()})


STARTING_OFFSETS = Parser(ACCEPTED, parse)
