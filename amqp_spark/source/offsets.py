"""Typed offsets of the ``amqp`` source and their JSON form.

Spark stores offsets as JSON and compares them as JSON *strings*: the same dict with another
key order would start a new batch. Every offset is therefore turned into a dict whose keys
are sorted (recursively) before it is handed to Spark, and parsed back with a message that
says what was expected.

Two kinds, one per queue type:

* :class:`ClassicOffset` — classic queues are consumed destructively, so an offset cannot
  name a position in the queue. It names, per queue, the last delivery tag of the driver's
  channel consuming it *and the connection it belongs to*: delivery tags only mean
  something on their channel, so tags of a dead connection are never acked on a new one.
* :class:`StreamOffset` — stream queues keep their messages; an offset is, per queue, the
  next stream offset to read (exclusive end of what was read). Ranges of these replay
  exactly. A query of a super stream (``superStream``) has a :class:`SuperStreamOffset`:
  the same per partition stream, under the super stream's name, so that a checkpoint of
  one super stream (or of plain stream queues) is never taken for another.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard


class OffsetError(ValueError):
    """An offset dict that is not what this source writes (e.g. a checkpoint of another
    source or of another queue type)."""


def sorted_dict(value: Any) -> Any:
    """``value`` with the keys of every dict in it sorted, so its JSON form is canonical."""
    if isinstance(value, Mapping):
        return {key: sorted_dict(value[key]) for key in sorted(value)}
    if isinstance(value, list | tuple):
        return [sorted_dict(item) for item in value]
    return value


@dataclass(frozen=True)
class ClassicOffset:
    """Per queue, all deliveries of the driver's consuming channel of that queue up to a
    delivery tag, on the connection ``connection``."""

    connection: str  #: an id chosen by the driver-side reader for each connection it opens
    tags: Mapping[str, int] = field(default_factory=dict)  #: queue -> last tag (0 = none yet)

    KIND = "classic"

    def to_dict(self) -> dict[str, Any]:
        return sorted_dict(
            {"kind": self.KIND, "connection": self.connection, "deliveryTags": dict(self.tags)}
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ClassicOffset:
        _expect_kind(raw, cls.KIND)
        connection, tags = raw.get("connection"), raw.get("deliveryTags")
        if not isinstance(connection, str) or not _positions(tags):
            raise OffsetError(f"not a classic-queue offset of the amqp source: {raw!r}")
        return cls(connection, dict(tags))

    def tag(self, queue: str, connection: str) -> int:
        """The last tag of ``queue`` this offset covers on ``connection`` (0 if another)."""
        return self.tags.get(queue, 0) if connection == self.connection else 0


@dataclass(frozen=True)
class StreamOffset:
    """Per stream queue, the next offset to read."""

    positions: Mapping[str, int] = field(default_factory=dict)

    KIND = "stream"

    def to_dict(self) -> dict[str, Any]:
        return sorted_dict({"kind": self.KIND, "queues": dict(self.positions)})

    @property
    def super_stream(self) -> str | None:
        """The super stream these are the partitions of (None: stream queues)."""
        return None

    @staticmethod
    def of(positions: Mapping[str, int], super_stream: str | None) -> StreamOffset:
        """The offset of stream queues, or of the partitions of ``super_stream``."""
        if super_stream is None:
            return StreamOffset(positions)
        return SuperStreamOffset(positions, super_stream)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> StreamOffset:
        """Either kind: the reader checks that it is the one it reads (``StreamTails``)."""
        if isinstance(raw, Mapping) and raw.get("kind") == SuperStreamOffset.KIND:
            return SuperStreamOffset.parse(raw)
        _expect_kind(raw, cls.KIND)
        queues = raw.get("queues")
        if not _positions(queues):
            raise OffsetError(f"not a stream-queue offset of the amqp source: {raw!r}")
        return cls(dict(queues))

    def __getitem__(self, queue: str) -> int:
        return self.positions[queue]


@dataclass(frozen=True)
class SuperStreamOffset(StreamOffset):
    """Per partition stream of the super stream ``name``, the next offset to read."""

    name: str = ""

    KIND = "superStream"

    @property
    def super_stream(self) -> str | None:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return sorted_dict(
            {"kind": self.KIND, "superStream": self.name, "partitions": dict(self.positions)}
        )

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> SuperStreamOffset:
        name, partitions = raw.get("superStream"), raw.get("partitions")
        if not isinstance(name, str) or not name or not _positions(partitions):
            raise OffsetError(f"not a super-stream offset of the amqp source: {raw!r}")
        return cls(dict(partitions), name)


def to_json(offset: ClassicOffset | StreamOffset) -> str:
    """The canonical JSON form (sorted keys), as Spark stores it."""
    return json.dumps(offset.to_dict(), sort_keys=True)


def _positions(value: object) -> TypeGuard[Mapping[str, int]]:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in value.items()
    )


def _expect_kind(raw: Mapping[str, Any], kind: str) -> None:
    if not isinstance(raw, Mapping) or raw.get("kind") != kind:
        got = raw.get("kind") if isinstance(raw, Mapping) else type(raw).__name__
        raise OffsetError(
            f"the checkpoint holds an offset of kind {got!r} but this query reads {kind} queues "
            f"(offset {raw!r}); use a new checkpointLocation when changing queueType"
        )
