"""Where each stream begins and ends, learned over the stream protocol: no tail consumer,
no per-message work on the driver.

``StreamStats`` gives a stream's first chunk id and its committed chunk id (the first
offset of the newest chunk readers may see). The committed chunk may be a tracking chunk
(``StoreOffset``, deduplication state; RabbitMQ delivers none of them to readers), so the
end is taken from the chunk a subscription at ``last`` delivers (the newest user chunk,
measured on RabbitMQ 4.0.5): its header's ``first_offset + num_records``. It is asked again
only when the committed chunk id changed, so an idle stream costs one ``StreamStats`` per
trigger, a busy one that plus one chunk.

Every range the executors read then ends at or before the end of a user chunk, which is
what lets a range read stop at the first chunk that reaches the range's end.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING

from amqp_protocol.stream.chunk import ChunkHeader, parse_chunk_header
from amqp_protocol.stream.values import OffsetSpecification, OffsetType
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.ends import StreamEnds

if TYPE_CHECKING:
    from amqp_spark.client.stream import StreamClient

log = logging.getLogger("amqp_spark.source")


class StreamProtocolEnds(StreamEnds):
    """The driver's view of where each stream queue ends, over the stream protocol."""

    def __init__(self, options: SourceOptions, stream_uri: str) -> None:
        super().__init__(options)
        self._uri = stream_uri
        self._client: StreamClient | None = None
        #: per queue: the committed chunk id last seen and the end found for it
        self._known: dict[str, tuple[int, int]] = {}
        self._count = self._bytes = 0  #: records and data bytes of the last chunks seen

    def _connected(self) -> StreamClient:
        from amqp_spark.client.stream import connect

        if self._client is None or not self._client.is_open:
            self._client = connect(
                self._uri,
                retries=self._options.max_reconnect_attempts,
                properties={"connection_name": "amqp-spark stream positions"},
            )
        return self._client

    def _current_ends(self) -> dict[str, int]:
        return {queue: self._end_of(queue) for queue in self._options.queues}

    def _settled_ends(self) -> dict[str, int]:
        # Nothing to wait for: StreamStats answers with what is committed now.
        return self._current_ends()

    def _end_of(self, queue: str) -> int:
        from amqp_spark.client.stream import StreamError

        client = self._connected()
        try:
            committed = client.stream_stats(queue)["committed_chunk_id"]
        except StreamError as e:
            raise _named(queue, e) from e
        known = self._known.get(queue)
        if known is not None and known[0] == committed:
            return known[1]
        end = 0 if committed < 0 else self._end_of_last_chunk(client, queue)
        if end is None:  # only tracking chunks: the end of what was seen before
            end = 0 if known is None else known[1]
        self._known[queue] = (committed, end)
        return end

    def _end_of_last_chunk(self, client: StreamClient, queue: str) -> int | None:
        header = self._first_chunk_header(client, queue, OffsetSpecification(OffsetType.LAST))
        if header is None:
            return None
        self._count += header.num_records
        self._bytes += header.data_length
        return int(header.next_offset)

    def _first_chunk_header(
        self, client: StreamClient, queue: str, spec: OffsetSpecification
    ) -> ChunkHeader | None:
        """The header of the first chunk a subscription at ``spec`` delivers (None: none
        within ``pollTimeoutMs``)."""
        from amqp_spark.client.stream import StreamError, StreamTimeout

        try:
            subscription = client.subscribe(queue, spec, credit=1)
        except StreamError as e:
            raise _named(queue, e) from e
        try:
            delivery = subscription.next_chunk(timeout=self._options.poll_timeout)
        except StreamTimeout:
            return None
        finally:
            subscription.close()
        return parse_chunk_header(delivery.chunk)

    def _first_at(self, queue: str, spec: str | datetime.datetime) -> int | None:
        from amqp_spark.client.stream import StreamError

        with self._lock:
            client = self._connected()
            if spec == "first":
                try:
                    first = client.stream_stats(queue)["first_chunk_id"]
                except StreamError as e:
                    raise _named(queue, e) from e
                return None if first < 0 else first
            assert isinstance(spec, datetime.datetime)
            millis = int(spec.timestamp() * 1000)
            header = self._first_chunk_header(
                client, queue, OffsetSpecification(OffsetType.TIMESTAMP, millis)
            )
            return None if header is None else int(header.first_offset)

    def _sizes_seen(self) -> tuple[int, int]:
        return self._count, self._bytes

    def report(self) -> dict[str, int]:
        with self._lock:
            return {q: self._known.get(q, (-1, 0))[1] for q in self._options.queues}

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            if client is not None:
                client.close()


def _named(queue: str, error: Exception) -> Exception:
    """A refusal of ``queue`` as an error naming the option to fix (a stream that does not
    exist), else ``error`` itself."""
    from amqp_protocol.generated.stream_codes import ResponseCode
    from amqp_spark.client.stream import StreamError
    from amqp_spark.options import OptionError

    if isinstance(error, StreamError) and error.code == ResponseCode.STREAM_DOES_NOT_EXIST:
        return OptionError(
            "queue",
            queue,
            "names of stream queues that exist on the broker (the source declares none)",
            f"the broker says: {error}",
        )
    return error
