"""Rule file:01: "The server MUST make a best-effort to hold file messages on a reliable
storage mechanism."

With a data directory configured, the file lane of a durable queue keeps each of its
messages on disk, one file per message under ``<data_dir>/amqp0-9/files/<queue id>/``
(the store's id of the queue, fresh for each new declaration, so files never pass from a
deleted queue to a later one of the same name): written and fsync'd before the lane takes
the message, deleted when the message leaves the queue for good (acknowledged, rejected,
purged, expired, delivered to a no-ack consumer), and all of them when the queue is
deleted. After a restart the lane reads them back, marked redelivered, when the queue's
file lane is first used. The journal of basic messages is not involved: file messages are
large and travel whole, so one file each fits them.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amqp_spark.protocol import SPEC_0_9, values

from ...model.queues import Queue
from .class_message import ClassMessage

if TYPE_CHECKING:
    from ...model.message import Message, QueuedMessage
    from ...model.vhost import VirtualHost

_SUFFIX = ".file"
_LENGTH = struct.Struct(">I")


def directory(data_dir: str, queue: Queue) -> Path:
    return Path(data_dir) / "amqp0-9" / "files" / str(queue.queue_id)


class DurableFileLane(Queue):
    """The file lane of a durable queue, mirrored to ``directory``."""

    def __init__(
        self, vhost: VirtualHost, name: str, arguments: dict[str, Any], where: Path
    ) -> None:
        super().__init__(vhost, name, arguments=arguments)
        self.directory = where
        self._paths: dict[Message, Path] = {}
        where.mkdir(parents=True, exist_ok=True)
        stored = sorted(where.glob("*" + _SUFFIX))
        self._next = int(stored[-1].stem) + 1 if stored else 1
        for path in stored:
            message = _read(path)
            self._paths[message] = path
            self.restore(message)

    def publish(self, message: Message) -> bool:
        path = self.directory / f"{self._next:020d}{_SUFFIX}"
        self._next += 1
        _write(path, message)
        self._paths[message] = path
        return super().publish(message)

    def _forget(self, entry: QueuedMessage) -> None:
        super()._forget(entry)
        path = self._paths.pop(entry.message, None)
        if path is not None:
            path.unlink(missing_ok=True)


def discard(data_dir: str | None, queue: Queue) -> None:
    """``queue`` was deleted: none of its file messages is kept."""
    if data_dir and queue.queue_id:
        shutil.rmtree(directory(data_dir, queue), ignore_errors=True)


def _write(path: Path, message: Message) -> None:
    assert isinstance(message, ClassMessage)
    header = values.encode_table(
        {
            "exchange": message.exchange,
            "routing-key": message.routing_key,
            "identifier": message.identifier,
            "properties": message.properties.present(),
        }
    )
    temporary = path.with_suffix(".tmp")
    with open(temporary, "wb") as f:
        f.write(_LENGTH.pack(len(header)) + header + message.body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _read(path: Path) -> ClassMessage:
    data = path.read_bytes()
    (length,) = _LENGTH.unpack_from(data)
    header, _ = values.decode_table(data, _LENGTH.size)
    properties = SPEC_0_9.properties("file")(**header["properties"])
    return ClassMessage(
        "file",
        header["exchange"],
        header["routing-key"],
        properties,
        data[_LENGTH.size + length :],
        priority=header["properties"].get("priority"),
        identifier=header["identifier"],
    )
