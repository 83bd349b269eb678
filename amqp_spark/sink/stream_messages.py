"""Arrow record batches -> what the stream writer publishes: per stream, the rows' publishing
ids and AMQP 1.0 messages.

A row is first made into the 0-9-1 message the sink sends over AMQP 0-9-1
(``messages.to_messages``: same columns, options, checks and ``message_id``), then into the
AMQP 1.0 message RabbitMQ 4 stores for such a publish (``amqp_protocol.amqp10.from_amqp091``),
so that a consumer reads the same properties back whichever protocol wrote the row. Its
publishing id is the row's in ``stream_ids``. The ``x-stream-filter-value`` header is also
handed out per message: over the stream protocol the filter value travels in the Publish
frame (version 2), which is what the stream's chunk filter is built from.

Where no column gives a property, rows differ only in their ids and bodies, and most
messages are put together from one encoded message per id length (``_stored_ids_apart``:
13 -> 3.7 us of CPU per 100 B row, docs/measurements/stream-sink.md).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from amqp_protocol.amqp10 import encode, from_amqp091
from amqp_protocol.amqp10.amqp091 import split_once
from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.stream_filter import FILTER_VALUE_HEADER

from .columns import FILTER_VALUE_COLUMN, PROPERTY_COLUMNS, ColumnPlan
from .messages import MessageIds, Publish, to_messages
from .settings import SinkSettings
from .stream_ids import PublishingIds

#: A row's basic properties (generated classes: the base class does not name them).
_headers, _message_id = operator.attrgetter("headers"), operator.attrgetter("message_id")


@dataclass
class StreamRun:
    """The messages of a record batch for one stream, in row order."""

    stream: str
    messages: list[PublishedMessage] = field(default_factory=list)

    @property
    def filtered(self) -> bool:
        """Whether any message has a filter value (then Publish version 2 is needed)."""
        return any(m.filter_value is not None for m in self.messages)


def to_stream_runs(
    batch: pa.RecordBatch,
    plan: ColumnPlan,
    settings: SinkSettings,
    message_ids: MessageIds,
    publishing: PublishingIds,
    first_row: int,
    route: str | Mapping[str, str],
) -> list[StreamRun]:
    """The messages of ``batch`` (whose first row is row ``first_row`` of the partition) by
    stream: all to ``route`` when it is a stream's name, else to the partition stream that
    ``route`` maps each row's binding key to (a super stream's, chosen as over AMQP 0-9-1)."""
    ids = publishing.for_rows(first_row, batch.num_rows)
    rows = list(
        itertools.chain.from_iterable(
            run.messages for run in to_messages(batch, plan, settings, message_ids, first_row)
        )
    )
    stored = _stored_ids_apart(rows) if _only_ids_differ(plan) else _stored(rows)
    filter_values = [
        None if (headers := _headers(properties)) is None else headers.get(FILTER_VALUE_HEADER)
        for _, _, properties in rows
    ]
    messages = [
        PublishedMessage(publishing_id, message, filter_value)
        for publishing_id, message, filter_value in zip(ids, stored, filter_values, strict=True)
    ]
    if isinstance(route, str):
        return [StreamRun(route, messages)] if messages else []
    runs: dict[str, StreamRun] = {}
    for (key, _, _), message in zip(rows, messages, strict=True):
        stream = route[key]
        run = runs.get(stream)
        if run is None:
            run = runs[stream] = StreamRun(stream)
        run.messages.append(message)
    return list(runs.values())


def _only_ids_differ(plan: ColumnPlan) -> bool:
    """Whether the rows' properties can differ only in their ``message_id``, the sink's own
    (``MessageIds``): no column gives a property or a filter value, so every other property
    comes from the options."""
    return not any(plan.has(name) for name in (*PROPERTY_COLUMNS, FILTER_VALUE_COLUMN))


def _stored(rows: Iterable[Publish]) -> Iterator[bytes]:
    """Each row's message as a stream stores it (``from_amqp091``)."""
    for _, body, properties in rows:
        yield from_amqp091(properties, body)


def _stored_ids_apart(rows: Iterable[Publish]) -> Iterator[bytes]:
    """``_stored`` of rows whose properties differ only in their ``message_id``, at a
    fraction of the cost: two messages whose ids have as many bytes encode alike but for
    the id's bytes and the body's data section, which ends the message. So the first row
    of each id length is encoded in full and cut around its id and before its body's
    encoding, and the rows after it are put together from the cuts and the body's
    encoding (whose constructor depends on the body's length only). (The sink's ids share
    a prefix and differ in the row number: a few lengths per task; they never begin with
    ``urn:uuid:``, the one kind of id ``from_amqp091`` stores other than as a string.)
    Where the id's bytes appear more than once, the rows of that length are encoded in
    full."""
    cuts: dict[int, tuple[bytes, bytes] | None] = {}
    #: per body length, the bytes before the body in its encoding (its constructor)
    constructors: dict[int, bytes] = {}
    for _, body, properties in rows:
        message_id = _message_id(properties).encode()
        size = len(message_id)
        if size not in cuts:
            message = from_amqp091(properties, body)
            cuts[size] = _cut(message, message_id, encode(body))
            yield message
        elif (cut := cuts[size]) is None:
            yield from_amqp091(properties, body)
        else:
            constructor = constructors.get(len(body))
            if constructor is None:
                encoded = encode(body)
                constructor = constructors[len(body)] = encoded[: len(encoded) - len(body)]
            yield b"".join((cut[0], message_id, cut[1], constructor, body))


def _cut(message: bytes, message_id: bytes, body: bytes) -> tuple[bytes, bytes] | None:
    """``message`` before its id's bytes, and from after them to before the encoded
    ``body`` at its end; None if the id's bytes are not found once before it."""
    if not message.endswith(body):
        return None
    return split_once(message[: len(message) - len(body)], message_id)
