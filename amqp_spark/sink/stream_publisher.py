"""Publishing one task's messages to streams over one stream-protocol connection, under one
producer name, with confirms, many messages a frame, and a bounded number outstanding.

The publisher declares one publisher per stream it writes to (a super stream's partitions
are streams of their own), all under the task's producer name (``stream_ids``), so that the
broker drops what an earlier attempt stored. It sends ``Publish`` frames of as many messages
as fit in the connection's ``frame_max`` and in the room the window leaves
(``PublishWindow``), and reads the broker's ``PublishConfirm`` / ``PublishError`` frames
whenever it has to wait. ``finish`` returns once every message is confirmed, or raises
``StreamPublishFailed`` naming what the broker refused and why.

The connection is what ``StreamLink`` says: the blocking stream-protocol client of
``amqp_spark.client.stream`` provides it. The publisher matches responses to its requests
by correlation id itself and keeps the confirms that arrive meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from amqp_protocol.generated.stream import (
    DeclarePublisher,
    DeclarePublisherResponse,
    DeletePublisher,
    DeletePublisherResponse,
    MetadataUpdate,
    Publish,
    PublishConfirm,
    PublishError,
    PublishV2,
    QueryPublisherSequence,
    QueryPublisherSequenceResponse,
)
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.chunk import SubBatchEntry
from amqp_protocol.stream.command import Command
from amqp_protocol.stream.values import PublishedMessage

from .stream_window import PublishWindow

log = logging.getLogger(__name__)

#: A Publish frame's bytes besides its messages: size, key, version, publisher id, count.
FRAME_OVERHEAD = 4 + 2 + 2 + 1 + 4
#: Publisher ids are one byte: a connection has at most this many publishers.
MAX_PUBLISHERS = 256

R = TypeVar("R", bound=Command)


class StreamLink(Protocol):
    """What the publisher needs of an open stream-protocol connection."""

    @property
    def frame_max(self) -> int:
        """The largest frame the broker accepts (tuned at the handshake)."""
        ...

    def send(self, command: Command) -> None:
        """Write ``command``'s frame."""
        ...

    def receive(self) -> Command:
        """The next command the broker sends; raises when none comes in time or the
        connection is lost."""
        ...

    def next_correlation_id(self) -> int: ...


class StreamPublishFailed(RuntimeError):
    """The broker refused a declaration or messages; says which, how many and why."""


class StreamUnavailable(StreamPublishFailed):
    """The broker says a stream's publishers are gone (its leader moved, it was deleted):
    what a failover handles, by publishing the unsettled messages again elsewhere."""


@dataclass
class _Publisher:
    publisher_id: int
    stream: str
    window: PublishWindow


def message_size(message: PublishedMessage, filtered: bool) -> int:
    """The bytes ``message`` takes in a Publish frame (version 2 when ``filtered``)."""
    body = message.message
    if isinstance(body, SubBatchEntry):
        raise TypeError("the stream writer publishes records, not sub-batches")
    size = 8 + 4 + len(body)
    if filtered:
        size += 2 + len((message.filter_value or "").encode())
    return size


class StreamPublisher:
    """One task's publishers on one connection; see the module docstring."""

    def __init__(self, link: StreamLink, name: str, max_in_flight: int, where: str) -> None:
        self.link = link
        self.name = name  #: the producer name (publisher reference)
        self.max_in_flight = max_in_flight
        self.where = where  #: "partition 3 of batch 7 of query ..." for messages
        self._publishers: dict[str, _Publisher] = {}
        self._by_id: dict[int, _Publisher] = {}

    def declare(self, stream: str) -> int:
        """Declare the publisher of ``stream`` (once) and return the stream's highest
        publishing id for the producer name (0: none; QueryPublisherSequence)."""
        if stream in self._publishers:
            return self._sequence(stream)
        publisher_id = len(self._publishers)
        if publisher_id >= MAX_PUBLISHERS:
            raise StreamPublishFailed(
                f"amqp sink: {self.where} writes to more than {MAX_PUBLISHERS} streams, the "
                "publishers one stream-protocol connection can have"
            )
        answer = self._request(
            DeclarePublisher(self.link.next_correlation_id(), publisher_id, self.name, stream),
            DeclarePublisherResponse,
        )
        self._check(answer.response_code, f"declaring publisher {self.name!r} on {stream!r}")
        publisher = _Publisher(publisher_id, stream, PublishWindow(self.max_in_flight))
        self._publishers[stream] = self._by_id[publisher_id] = publisher
        return self._sequence(stream)

    def _sequence(self, stream: str) -> int:
        answer = self._request(
            QueryPublisherSequence(self.link.next_correlation_id(), self.name, stream),
            QueryPublisherSequenceResponse,
        )
        if answer.response_code != ResponseCode.OK:
            # Needs read permission; the broker deduplicates without the answer anyway.
            log.info(
                "amqp sink: %s cannot query the publishing sequence of %r (response code "
                "0x%02x); publishing without it",
                self.where,
                stream,
                answer.response_code,
            )
            return 0
        return answer.sequence

    def publish(self, stream: str, messages: Sequence[PublishedMessage]) -> None:
        """Send ``messages`` (in increasing publishing id order) to ``stream``, whose
        publisher was declared, waiting for confirms while the window is full."""
        publisher = self._publishers[stream]
        filtered = any(m.filter_value is not None for m in messages)
        room_in_frame = self.link.frame_max - FRAME_OVERHEAD
        start = 0
        while start < len(messages):
            while publisher.window.room == 0:
                self._dispatch(self.link.receive())
            end, size = start, 0
            while end < len(messages) and end - start < publisher.window.room:
                size += message_size(messages[end], filtered)
                if size > room_in_frame:
                    break
                end += 1
            if end == start:
                raise StreamPublishFailed(
                    f"amqp sink: a message of {message_size(messages[start], filtered)} "
                    f"bytes (publishing id {messages[start].publishing_id}, {self.where}) does "
                    f"not fit in a frame of {self.link.frame_max} bytes, the broker's maximum"
                )
            frame = messages[start:end]
            kind = PublishV2 if filtered else Publish
            self.link.send(kind(publisher.publisher_id, list(frame)))
            publisher.window.sent(frame)
            start = end

    def finish(self) -> int:
        """Wait until every message is confirmed, delete the publishers (a connection
        refuses a second publisher of one name, and the next task reuses it) and return how
        many messages were confirmed. Raises ``StreamPublishFailed`` on refused messages."""
        while any(p.window.outstanding for p in self._publishers.values()):
            self._dispatch(self.link.receive())
        refused = [(p.stream, p.window.refused) for p in self._publishers.values()]
        refused = [(stream, errors) for stream, errors in refused if errors]
        if refused:
            stream, errors = refused[0]
            count = sum(len(errors) for _, errors in refused)
            raise StreamPublishFailed(
                f"amqp sink: the broker refused {count} message(s) of {self.where}; first: "
                f"publishing id {errors[0][0]} on stream {stream!r}, "
                f"{_code_name(errors[0][1])}"
            )
        for publisher in self._publishers.values():
            answer = self._request(
                DeletePublisher(self.link.next_correlation_id(), publisher.publisher_id),
                DeletePublisherResponse,
            )
            self._check(answer.response_code, f"deleting the publisher of {publisher.stream!r}")
        return sum(p.window.confirmed for p in self._publishers.values())

    def unsettled(self) -> dict[str, list[PublishedMessage]]:
        """Per stream, the messages sent and not answered: what a failover publishes
        again, under the same ids, on a new connection."""
        return {p.stream: list(p.window.unsettled()) for p in self._publishers.values()}

    def _request(self, command: Command, kind: type[R]) -> R:
        self.link.send(command)
        correlation_id = command.correlation_id  # type: ignore[attr-defined]
        while True:
            received = self.link.receive()
            if isinstance(received, kind) and received.correlation_id == correlation_id:  # type: ignore[attr-defined]
                return received
            self._dispatch(received)

    def _dispatch(self, command: Command) -> None:
        """Apply a frame the broker sent on its own: confirms, errors, metadata updates."""
        if isinstance(command, PublishConfirm):
            self._by_id[command.publisher_id].window.on_confirm(command.publishing_ids)
        elif isinstance(command, PublishError):
            self._by_id[command.publisher_id].window.on_error(command.errors)
        elif isinstance(command, MetadataUpdate) and command.stream in self._publishers:
            raise StreamUnavailable(
                f"amqp sink: stream {command.stream!r} became unavailable while {self.where} "
                f"published to it ({_code_name(command.code)})"
            )

    def _check(self, code: int, doing: str) -> None:
        if code != ResponseCode.OK:
            raise StreamPublishFailed(
                f"amqp sink: {doing} failed for {self.where}: {_code_name(code)}"
            )


def _code_name(code: int) -> str:
    try:
        return f"{ResponseCode(code).name} (0x{code:02x})"
    except ValueError:
        return f"response code 0x{code:02x}"
