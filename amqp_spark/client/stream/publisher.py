"""Publishing one task's messages to streams over one ``StreamClient``, under one producer
name, with confirms, many messages a frame, and a bounded number outstanding.

The publisher declares one publisher per stream it writes to (a super stream's partitions
are streams of their own), all under one producer name, so that the broker drops what an
earlier attempt under that name stored (publisher deduplication; the sink derives the names
and publishing ids: ``amqp_spark.sink.stream_ids``). It sends ``Publish`` frames of as many
messages as fit in the connection's ``frame_max`` and in the room the window leaves
(``PublishWindow``), and takes the broker's ``PublishConfirm`` / ``PublishError`` frames
whenever it has to wait. ``finish`` returns once every message is answered, or raises
``StreamPublishFailed`` naming what the broker refused and why. A stream that becomes
unavailable meanwhile, or a lost connection, raises the client's error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from amqp_protocol.generated.stream import (
    DeclarePublisher,
    DeclarePublisherResponse,
    DeletePublisher,
    DeletePublisherResponse,
    Publish,
    PublishConfirm,
    PublishV2,
    QueryPublisherSequence,
    QueryPublisherSequenceResponse,
)
from amqp_protocol.generated.stream_codes import ResponseCode
from amqp_protocol.stream.chunk import SubBatchEntry
from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.client.exceptions import ClientError, ClientTimeout

from .connection import StreamClient, StreamError
from .window import PublishWindow

log = logging.getLogger(__name__)

#: A Publish frame's bytes besides its messages: size, key, version, publisher id, count.
FRAME_OVERHEAD = 4 + 2 + 2 + 1 + 4
#: Publisher ids are one byte: a connection has at most this many publishers.
MAX_PUBLISHERS = 256


class StreamPublishFailed(ClientError):
    """The broker refused messages, or they cannot be sent; says which, how many and why."""


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

    def __init__(self, client: StreamClient, name: str, max_in_flight: int, where: str) -> None:
        self.client = client
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
                f"stream publisher: {self.where} writes to more than {MAX_PUBLISHERS} streams, "
                "the publishers one stream-protocol connection can have"
            )
        self.client.request(
            DeclarePublisher(self.client.next_correlation_id(), publisher_id, self.name, stream),
            DeclarePublisherResponse,
            f"declaring publisher {self.name!r} on stream {stream!r} for {self.where}",
        )
        publisher = _Publisher(publisher_id, stream, PublishWindow(self.max_in_flight))
        self._publishers[stream] = self._by_id[publisher_id] = publisher
        return self._sequence(stream)

    def _sequence(self, stream: str) -> int:
        try:
            answer = self.client.request(
                QueryPublisherSequence(self.client.next_correlation_id(), self.name, stream),
                QueryPublisherSequenceResponse,
                f"the publishing sequence of {self.name!r} on stream {stream!r}",
            )
        except StreamError as e:
            # Needs read permission; the broker deduplicates without the answer anyway.
            log.info("stream publisher: %s publishes without it (%s)", self.where, e)
            return 0
        return answer.sequence

    def publish(self, stream: str, messages: Sequence[PublishedMessage]) -> None:
        """Send ``messages`` (in increasing publishing id order) to ``stream``, whose
        publisher was declared, waiting for confirms while the window is full."""
        publisher = self._publishers[stream]
        filtered = any(m.filter_value is not None for m in messages)
        room_in_frame = self.client.frame_max - FRAME_OVERHEAD
        start = 0
        while start < len(messages):
            while publisher.window.room == 0:
                self._take_answer()
            end, size = start, 0
            while end < len(messages) and end - start < publisher.window.room:
                size += message_size(messages[end], filtered)
                if size > room_in_frame:
                    break
                end += 1
            if end == start:
                raise StreamPublishFailed(
                    f"stream publisher: a message of {message_size(messages[start], filtered)} "
                    f"bytes (publishing id {messages[start].publishing_id}, {self.where}) does "
                    f"not fit in a frame of {self.client.frame_max} bytes, the broker's maximum"
                )
            frame = messages[start:end]
            kind = PublishV2 if filtered else Publish
            self.client.send(kind(publisher.publisher_id, list(frame)))
            publisher.window.sent(frame)
            start = end

    def finish(self) -> int:
        """Wait until every message is answered, delete the publishers (a connection
        refuses a second publisher of one name, and the next task reuses it) and return how
        many messages were confirmed. Raises ``StreamPublishFailed`` on refused messages."""
        while any(p.window.outstanding for p in self._publishers.values()):
            self._take_answer()
        refused = [(p.stream, p.window.refused) for p in self._publishers.values()]
        refused = [(stream, errors) for stream, errors in refused if errors]
        if refused:
            stream, errors = refused[0]
            count = sum(len(errors) for _, errors in refused)
            raise StreamPublishFailed(
                f"stream publisher: the broker refused {count} message(s) of {self.where}; "
                f"first: publishing id {errors[0][0]} on stream {stream!r}, "
                f"{_code_name(errors[0][1])}"
            )
        for publisher in self._publishers.values():
            self.client.request(
                DeletePublisher(self.client.next_correlation_id(), publisher.publisher_id),
                DeletePublisherResponse,
                f"deleting the publisher of {self.where} on stream {publisher.stream!r}",
            )
        return sum(p.window.confirmed for p in self._publishers.values())

    def _take_answer(self) -> None:
        """Wait for the next confirm or error and apply it to its publisher's window."""
        answer = self.client.next_publish_answer(self.client.timeout)
        if answer is None:
            raise ClientTimeout(
                f"stream publisher: no confirm for {self.where} within {self.client.timeout:.0f} s"
            )
        window = self._by_id[answer.publisher_id].window
        if isinstance(answer, PublishConfirm):
            window.on_confirm(answer.publishing_ids)
        else:
            window.on_error(answer.errors)


def _code_name(code: int) -> str:
    try:
        return f"{ResponseCode(code).name} (0x{code:02x})"
    except ValueError:
        return f"response code 0x{code:02x}"
