"""A stream-protocol subscription: a cursor in one stream's log, the chunk credit the
client granted, and the filter it asked for.

A subscription is sent whole chunks, as RabbitMQ sends them: one ``Deliver`` per chunk,
each taking one credit, the chunk's bytes as the log stores them (one ``pread``; the
header and the data section, without the bloom filter and trailer, as Osiris's
``send_file`` does); a chunk its filter cannot match is passed unread. Sending stops
when the credit is spent or the connection's writer is paused (the socket's buffer is
full), and goes on when either comes back or the stream grows.
"""

from __future__ import annotations

from collections.abc import Callable

from amqp_protocol.stream.chunk import HEADER, parse_chunk_header

from ..streams.chunk_filter import ConsumerFilter
from ..streams.queue import StreamQueue

#: A Deliver frame's sender: subscription id, the chunk's header and data, committed id.
SendChunk = Callable[[int, memoryview, memoryview, int], None]


class Subscription:
    def __init__(
        self,
        subscription_id: int,
        queue: StreamQueue,
        cursor: int,
        credit: int,
        wanted: ConsumerFilter | None,
    ) -> None:
        self.id = subscription_id
        self.queue = queue
        self.cursor = cursor
        self.credit = credit
        self.wanted = wanted

    def pump(self, send: SendChunk, can_write: Callable[[], bool]) -> None:
        """Send chunks from the cursor while there is credit and the writer takes them."""
        log = self.queue.log
        while self.credit > 0 and can_write() and not self.queue.deleted:
            cursor = max(self.cursor, log.first_offset)  # retention may have passed it
            if cursor >= log.next_offset:
                self.cursor = cursor
                return
            if self.wanted is not None:
                filter_bytes, after = log.chunk_filter(cursor)
                if not self.wanted.matches_chunk(filter_bytes):
                    self.cursor = after
                    continue
            stored = memoryview(log.stored_chunk(cursor))
            header = parse_chunk_header(stored)
            self.cursor = header.next_offset
            data = HEADER.size + header.bloom_size
            last = log.last_chunk_offset
            committed = header.first_offset if last is None else last
            send(
                self.id, stored[: HEADER.size], stored[data : data + header.data_length], committed
            )
            self.credit -= 1
