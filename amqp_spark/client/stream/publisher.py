"""Publishing one task's messages to streams over one ``StreamClient``, under one producer
name, with confirms, many messages a frame, and a bounded number outstanding.

The publisher declares one publisher per stream it writes to (a super stream's partitions
are streams of their own), all under one producer name, so that the broker drops what an
earlier attempt under that name stored (publisher deduplication; the sink derives the names
and publishing ids: ``amqp_spark.sink.stream_ids``). It sends ``Publish`` frames of as many
messages as fit in the connection's ``frame_max`` and in the room the window leaves
(``PublishWindow``), and takes the broker's ``PublishConfirm`` / ``PublishError`` frames
whenever it has to wait. ``finish`` returns once every message is answered, or raises
``StreamPublishFailed`` naming what the broker refused and why.

Given ``reconnect`` (``nodes.open_stream``), a lost connection, a broker silent past the
client's timeout or a stream without a leader for a while (``nodes.is_transient``) does not
end the publisher: it connects again (the next node of ``streamUri`` first), declares its
publishers again under the same producer name and ids, asks each stream the highest
publishing id it holds for the name (QueryPublisherSequence, answered by the stream's
leader), counts the outstanding messages at or below it as stored and sends the others
again, in order: the stream holds each message once, none is lost. It gives up (raising the
error) after ``max_losses`` losses in a row without a confirm between them, and from the
second in a row on pauses first (``backoff.after_losses``). Without ``reconnect``, or for
any other error, the client's error is raised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
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
from amqp_spark.client import backoff
from amqp_spark.client.exceptions import ClientError, ClientTimeout

from .connection import StreamClient, StreamError
from .nodes import TRANSIENT_CODES, is_transient
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


#: Connects again and runs the given setup on the new connection (``nodes.open_stream``).
Reconnect = Callable[[Callable[[StreamClient], None]], StreamClient]


class StreamPublisher:
    """One task's publishers on one connection; see the module docstring."""

    def __init__(
        self,
        client: StreamClient,
        name: str,
        max_in_flight: int,
        where: str,
        reconnect: Reconnect | None = None,
        max_losses: int = 0,
    ) -> None:
        self.client = client  #: the connection now (another after a failover)
        self.name = name  #: the producer name (publisher reference)
        self.max_in_flight = max_in_flight
        self.where = where  #: "partition 3 of batch 7 of query ..." for messages
        self._reconnect = reconnect
        self._max_losses = max_losses
        self._losses = 0  #: connections lost since the last confirm
        self._publishers: dict[str, _Publisher] = {}
        self._by_id: dict[int, _Publisher] = {}

    def declare(self, stream: str) -> int:
        """Declare the publisher of ``stream`` (once) and return the stream's highest
        publishing id for the producer name (0: none; QueryPublisherSequence)."""
        while True:
            try:
                if stream not in self._publishers:
                    self._add_publisher(stream)
                return self._sequence(self.client, stream)
            except (ClientError, OSError) as e:
                self._fail_over(e)

    def _add_publisher(self, stream: str) -> None:
        publisher_id = len(self._publishers)
        if publisher_id >= MAX_PUBLISHERS:
            raise StreamPublishFailed(
                f"stream publisher: {self.where} writes to more than {MAX_PUBLISHERS} streams, "
                "the publishers one stream-protocol connection can have"
            )
        publisher = _Publisher(publisher_id, stream, PublishWindow(self.max_in_flight))
        self._declare_on(self.client, publisher)
        self._publishers[stream] = self._by_id[publisher_id] = publisher

    def _declare_on(self, client: StreamClient, publisher: _Publisher) -> None:
        client.request(
            DeclarePublisher(
                client.next_correlation_id(), publisher.publisher_id, self.name, publisher.stream
            ),
            DeclarePublisherResponse,
            f"declaring publisher {self.name!r} on stream {publisher.stream!r} for {self.where}",
        )

    def _sequence(self, client: StreamClient, stream: str) -> int:
        try:
            answer = client.request(
                QueryPublisherSequence(client.next_correlation_id(), self.name, stream),
                QueryPublisherSequenceResponse,
                f"the publishing sequence of {self.name!r} on stream {stream!r}",
            )
        except StreamError as e:
            if is_transient(e):
                raise
            # Needs read permission; the broker deduplicates without the answer anyway.
            log.info("stream publisher: %s publishes without it (%s)", self.where, e)
            return 0
        return answer.sequence

    def publish(self, stream: str, messages: Sequence[PublishedMessage]) -> None:
        """Send ``messages`` (in increasing publishing id order) to ``stream``, whose
        publisher was declared, waiting for confirms while the window is full."""
        publisher = self._publishers[stream]
        filtered = any(m.filter_value is not None for m in messages)
        start = 0
        while start < len(messages):
            try:
                while publisher.window.room == 0:
                    self._take_answer()
                room = messages[start : start + publisher.window.room]
                frame = next(self._frames(self.client, room, filtered))
                self._send(self.client, publisher, frame, filtered)
                start += len(frame)
            except (ClientError, OSError) as e:
                self._fail_over(e)

    def _frames(
        self, client: StreamClient, messages: Sequence[PublishedMessage], filtered: bool
    ) -> Iterator[Sequence[PublishedMessage]]:
        """``messages`` cut into Publish frames of at most ``client``'s ``frame_max``."""
        room_in_frame = client.frame_max - FRAME_OVERHEAD
        start = 0
        while start < len(messages):
            end, size = start, 0
            while end < len(messages):
                size += message_size(messages[end], filtered)
                if size > room_in_frame:
                    break
                end += 1
            if end == start:
                raise StreamPublishFailed(
                    f"stream publisher: a message of {message_size(messages[start], filtered)} "
                    f"bytes (publishing id {messages[start].publishing_id}, {self.where}) does "
                    f"not fit in a frame of {client.frame_max} bytes, the broker's maximum"
                )
            yield messages[start:end]
            start = end

    @staticmethod
    def _send(
        client: StreamClient,
        publisher: _Publisher,
        frame: Sequence[PublishedMessage],
        filtered: bool,
    ) -> None:
        kind = PublishV2 if filtered else Publish
        client.send(kind(publisher.publisher_id, list(frame)))
        publisher.window.sent(frame)

    def finish(self) -> int:
        """Wait until every message is answered, delete the publishers (a connection
        refuses a second publisher of one name, and the next task reuses it) and return how
        many messages were confirmed. Raises ``StreamPublishFailed`` on refused messages."""
        while any(p.window.outstanding for p in self._publishers.values()):
            try:
                self._take_answer()
            except (ClientError, OSError) as e:
                self._fail_over(e)
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
        """Wait for the next confirm or error and apply it to its publisher's window. An
        error saying the stream has no leader for now leaves its messages outstanding and
        is raised (``_fail_over`` sends them again)."""
        answer = self.client.next_publish_answer(self.client.timeout)
        if answer is None:
            raise ClientTimeout(
                f"stream publisher: no confirm for {self.where} within {self.client.timeout:.0f} s"
            )
        window = self._by_id[answer.publisher_id].window
        if isinstance(answer, PublishConfirm):
            window.on_confirm(answer.publishing_ids)
            self._losses = 0
            return
        for_now = [(pid, code) for pid, code in answer.errors if code in TRANSIENT_CODES]
        window.on_error([e for e in answer.errors if e[1] not in TRANSIENT_CODES])
        if for_now:
            raise StreamError(
                f"stream publisher: {len(for_now)} message(s) of {self.where} refused for now",
                for_now[0][1],
            )

    def _fail_over(self, error: ClientError | OSError) -> None:
        """Go on on a new connection after ``error`` (see the module docstring), or raise
        ``error`` when it is not transient, there is no ``reconnect`` or too many were lost."""
        if self._reconnect is None or not is_transient(error):
            raise error
        self._losses += 1
        if self._losses > self._max_losses:
            raise error
        log.warning(
            "stream publisher: %s goes on on another connection after: %s", self.where, error
        )
        self.client.close(move_on=True)
        time.sleep(backoff.after_losses(self._losses))
        self.client = self._reconnect(self._restore)

    def _restore(self, client: StreamClient) -> None:
        """On ``client``, a new connection: every publisher declared again and what its
        stream does not hold sent again (see the module docstring)."""
        for publisher in self._publishers.values():
            self._declare_on(client, publisher)
            held = publisher.window.stored_through(self._sequence(client, publisher.stream))
            again = publisher.window.unconfirmed()
            log.info(
                "stream publisher: stream %r holds %d outstanding message(s) of %s; %d sent again",
                publisher.stream,
                held,
                self.where,
                len(again),
            )
            filtered = any(m.filter_value is not None for m in again)
            for frame in self._frames(client, again, filtered):
                self._send(client, publisher, frame, filtered)


def _code_name(code: int) -> str:
    try:
        return f"{ResponseCode(code).name} (0x{code:02x})"
    except ValueError:
        return f"response code 0x{code:02x}"
