"""Rules file:01 ("The server MUST make a best-effort to hold file messages on a reliable
storage mechanism") and message:01 (the same, SHOULD, for persistent messages of the message
class).

With a data directory configured, the file and message lanes of a durable queue keep their
file messages and their persistent (delivery-mode 2) messages on disk, one file per message
under ``<data_dir>/amqp0-9/<class>/<queue id>/`` (the store's id of the queue, fresh for
each new declaration, so nothing passes from a deleted queue to a later one of the same
name): written and fsync'd before the lane takes the message, deleted when the message
leaves the queue for good (acknowledged, rejected, purged, expired, delivered to a no-ack
consumer), and all of them when the queue is deleted. After a restart a lane reads them
back, marked redelivered, when it is first used. The journal of basic messages is not
involved: these classes' properties differ from basic's, and file messages are large and
travel whole, so one file each fits them.
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


#: The content classes whose lanes are kept on disk.
CLASSES = ("file", "message")


def directory(data_dir: str, content_class: str, queue: Queue) -> Path:
    return Path(data_dir) / "amqp0-9" / content_class / str(queue.queue_id)


def kept(message: ClassMessage) -> bool:
    """Every file message; message-class messages with delivery-mode 2 (persistent)."""
    return message.content_class == "file" or message.properties.get("delivery_mode") == 2


class DurableLane(Queue):
    """A file or message lane of a durable queue, mirrored to ``directory``."""

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
        assert isinstance(message, ClassMessage)
        if kept(message):
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
    """``queue`` was deleted: none of its messages is kept."""
    if data_dir and queue.queue_id:
        for content_class in CLASSES:
            shutil.rmtree(directory(data_dir, content_class, queue), ignore_errors=True)


def _write(path: Path, message: ClassMessage) -> None:
    properties = message.properties
    header = values.encode_table(
        {
            "class": message.content_class,
            "exchange": message.exchange,
            "routing-key": message.routing_key,
            "identifier": message.identifier,
            "priority": message.priority,
            "properties": properties if isinstance(properties, dict) else properties.present(),
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
    content_class, properties = header["class"], header["properties"]
    return ClassMessage(
        content_class,
        header["exchange"],
        header["routing-key"],
        SPEC_0_9.properties("file")(**properties) if content_class == "file" else properties,
        data[_LENGTH.size + length :],
        priority=header["priority"],
        identifier=header["identifier"],
    )
