"""Deliveries to Arrow record batches in the source's schema, built column by column.

Building each column as one Python list and handing it to pyarrow once is what makes the
source fast (about 3x rows/s over tuples); this module is the only place that knows how a
delivery maps onto the columns of :mod:`amqp_spark.schema`.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import functools
import json
import operator
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from amqp_protocol.amqp10.columns import FIELDS, StoredColumns
from amqp_protocol.events import DeliveryColumns
from amqp_protocol.properties import names_given
from amqp_spark.schema import arrow_schema

#: The header RabbitMQ puts on every delivery from a stream queue: its offset.
STREAM_OFFSET_HEADER = "x-stream-offset"


class KindLike(Protocol):
    """What the columns of a delivery's kind are read from: an ``amqp_spark.client.Delivery``
    or an ``amqp_protocol.events.DeliveryKind`` (read-only: a named tuple's fields)."""

    @property
    def redelivered(self) -> bool: ...

    @property
    def exchange(self) -> str: ...

    @property
    def routing_key(self) -> str: ...

    @property
    def properties(self) -> Any: ...


class DeliveryLike(KindLike, Protocol):
    """What conversion needs of an ``amqp_spark.client.Delivery``."""

    delivery_tag: int
    body: bytes


@functools.cache
def source_arrow_schema() -> pa.Schema:
    """The exact Arrow schema ``read()`` must yield (cached: it imports pyspark)."""
    schema: pa.Schema = arrow_schema()
    return schema


def render_header(value: object) -> str | None:
    """A header value of any AMQP field type as the string the ``headers`` column holds.

    Strings stay as they are (so a row written by the sink reads back identical); bytes
    that are UTF-8 are decoded, other bytes become ``base64:...``; booleans are
    ``true``/``false``; timestamps ISO-8601 in UTC; nested tables and arrays JSON.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(raw).decode("ascii")
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        return moment.astimezone(datetime.timezone.utc).isoformat()
    return json.dumps(_jsonable(value), sort_keys=True)


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return render_header(value)


def stream_offset_of(delivery: DeliveryLike) -> int | None:
    """The stream offset a stream queue put in the delivery's headers (None otherwise)."""
    headers = delivery.properties.headers
    if not headers:
        return None
    offset = headers.get(STREAM_OFFSET_HEADER)
    return offset if isinstance(offset, int) and not isinstance(offset, bool) else None


def to_record_batch(
    deliveries: Sequence[DeliveryLike], queue: str, with_offsets: bool
) -> pa.RecordBatch:
    """One record batch of ``deliveries``, all from ``queue``: each delivery its own kind
    (``kind_columns``), with its body and delivery tag.

    ``with_offsets`` fills the ``offset`` column from the ``x-stream-offset`` header (stream
    queues); classic-queue rows have a null offset.
    """
    return _in_schema(
        pa.array(list(map(_body_of, deliveries)), pa.binary()),
        pa.array(list(map(_tag_of, deliveries)), pa.int64()),
        queue,
        pa.array(list(map(stream_offset_of, deliveries)), pa.int64()) if with_offsets else None,
        kind_columns(deliveries),
    )


_body_of = operator.attrgetter("body")
_tag_of = operator.attrgetter("delivery_tag")


def _array(column: pa.Array | list[Any], arrow_type: pa.DataType) -> pa.Array:
    return column if isinstance(column, pa.Array) else pa.array(column, type=arrow_type)


def _timestamps(seconds: Any, arrow_type: pa.DataType) -> pa.Array:
    """The timestamp column from the property: whole seconds (an int, from the codec)."""
    return pc.multiply(pa.array(seconds, type=pa.int64()), 1_000_000).cast(arrow_type)


def _headers(tables: list[dict[str, Any] | None], arrow_type: pa.DataType) -> pa.Array | list[Any]:
    """The headers column: null for no headers table, else its entries rendered."""
    if tables.count(None) == len(tables):
        return pa.nulls(len(tables), arrow_type)
    return [
        None if t is None else [(str(k), render_header(v)) for k, v in t.items()] for t in tables
    ]


#: The columns of a row that are its own, not its kind's.
_ROW_COLUMNS = ("body", "delivery_tag", "queue", "offset")
_KIND_INDEX = "kind"


def classic_rows(columns: DeliveryColumns) -> pa.RecordBatch:
    """The columns of classic-queue deliveries that are each row's own (body, delivery tag)
    and each row's kind: an index into ``kind_columns`` of the same deliveries' kinds."""
    return pa.RecordBatch.from_arrays(
        [
            pa.array(columns.bodies, pa.binary()),
            pa.array(columns.tags, pa.int64()),
            pa.array(columns.kinds, pa.int32()),
        ],
        names=["body", "delivery_tag", _KIND_INDEX],
    )


def kind_columns(kinds: Sequence[KindLike]) -> pa.RecordBatch:
    """One row per kind: every column of the source's schema that a delivery's kind
    determines (exchange, routing key, redelivered, the properties).

    Each column is one pass of C-level ``map(attrgetter)`` over the kinds, handed to pyarrow
    at once; a property no kind has is a column of nulls, read from none of them; timestamps
    are scaled by pyarrow, and the headers column is rendered in Python only for kinds that
    have headers.
    """
    n = len(kinds)
    props = list(map(operator.attrgetter("properties"), kinds))
    given = names_given(props)
    fields = [field for field in source_arrow_schema() if field.name not in _ROW_COLUMNS]
    arrays = []
    for field in fields:
        name, arrow_type = field.name, field.type
        if name in ("exchange", "routing_key", "redelivered"):
            values = list(map(operator.attrgetter(name), kinds))
        elif name in given:
            values = list(map(operator.attrgetter(name), props))
        else:
            arrays.append(pa.nulls(n, arrow_type))
            continue
        if name == "timestamp":
            arrays.append(_timestamps(values, arrow_type))
        elif name == "headers":
            arrays.append(_array(_headers(values, arrow_type), arrow_type))
        else:
            arrays.append(_array(values, arrow_type))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def joined_record_batch(rows: pa.RecordBatch, kinds: pa.RecordBatch, queue: str) -> pa.RecordBatch:
    """The record batch in the source's schema of ``classic_rows`` and their
    ``kind_columns``, all from ``queue``: each row's kind columns taken by index, in C. An
    executor does this, so that a partition carries each row's own columns only (a null
    property column costs 4 to 8 bytes a row in Arrow IPC, and the driver's JVM ships every
    byte of a partition)."""
    return _in_schema(
        rows.column("body"),
        rows.column("delivery_tag"),
        queue,
        None,
        kinds.take(rows.column(_KIND_INDEX)),
    )


def _in_schema(
    bodies: pa.Array, tags: pa.Array, queue: str, offsets: pa.Array | None, kinds: pa.RecordBatch
) -> pa.RecordBatch:
    """The record batch in the source's schema of rows' own columns (``_ROW_COLUMNS``: all
    from ``queue``; ``offsets`` None for a null offset) and the columns of their kinds, one
    row of ``kinds`` each."""
    n = len(bodies)
    own = {
        "body": bodies,
        "delivery_tag": tags,
        "queue": pa.repeat(pa.scalar(queue, pa.string()), n),  # fill_null: 200x slower
        "offset": pa.nulls(n, pa.int64()) if offsets is None else offsets,
    }
    schema = source_arrow_schema()
    arrays = [own[f.name] if f.name in own else kinds.column(f.name) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _by_kind(name: str, values: list[Any], kinds: pa.Array) -> pa.Array:
    """Column ``name`` of rows that have the ``values`` of their kinds (``kinds``: each row's
    index into ``values``)."""
    arrow_type = source_arrow_schema().field(name).type
    if name == "timestamp":
        return _timestamps(values, arrow_type).take(kinds)
    return _array(values, arrow_type).take(kinds)


def stored_to_record_batch(stored: StoredColumns) -> pa.RecordBatch:
    """One record batch of a stream queue's rows read over the stream protocol
    (``amqp_protocol.amqp10.columns.StoredColumns``): each column but the body built from
    the distinct kinds of message by index (``take``), the ``x-stream-offset`` header put
    into each row's headers by pyarrow. Over the stream protocol there is no delivery tag
    (it belongs to a 0-9-1 channel) and no redelivery: those columns are null and false."""
    n = len(stored)
    schema = source_arrow_schema()
    kinds = pa.array(stored.kinds, pa.int32())
    distinct = dict(zip(FIELDS, zip(*stored.fields, strict=True), strict=True)) if n else {}
    offsets = [pa.array(range(first, first + count), pa.int64()) for first, count in stored.runs]
    built: dict[str, pa.Array | list[Any]] = {
        name: _by_kind(name, list(distinct.get(name, ())), kinds)
        for name in FIELDS
        if name != "headers"
    }
    built["body"] = stored.bodies
    built["offset"] = pa.concat_arrays(offsets) if offsets else pa.array([], pa.int64())
    built["queue"] = pa.repeat(pa.scalar(stored.queue, pa.string()), n)
    built["delivery_tag"] = pa.nulls(n, pa.int64())
    built["redelivered"] = pa.repeat(pa.scalar(False), n)
    built["headers"] = _headers_with_offsets(
        list(distinct.get("headers", ())), kinds, built["offset"], schema.field("headers").type
    )
    arrays = [_array(built[field.name], field.type) for field in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


#: Where a row's stream offset goes in its kind's headers until the rows are built.
_OFFSET_SLOT = "\x00x-stream-offset\x00"


def _headers_with_offsets(
    tables: list[dict[str, Any] | None], kinds: pa.Array, offsets: pa.Array, arrow_type: Any
) -> pa.Array:
    """The headers column of stream rows: each kind's headers rendered once with a slot where
    ``x-stream-offset`` sorts (as RabbitMQ sorts a delivery's headers when it adds it),
    taken for every row of the kind, the slots then filled with the rows' offsets."""
    templates = []
    for table in tables:
        entries = [
            (k, render_header(v)) for k, v in (table or {}).items() if k != STREAM_OFFSET_HEADER
        ]
        entries.append((STREAM_OFFSET_HEADER, _OFFSET_SLOT))
        templates.append(sorted(entries, key=lambda entry: entry[0]))
    rows = pa.array(templates, type=arrow_type).take(kinds)
    values = rows.items
    slots = pc.equal(values, _OFFSET_SLOT).fill_null(False)
    filled = pc.replace_with_mask(values, slots, offsets.cast(pa.string()))
    return pa.MapArray.from_arrays(rows.offsets, rows.keys, filled, type=arrow_type)


def serialize(batch: pa.RecordBatch) -> bytes:
    """Arrow IPC stream bytes of one batch: what a partition carries to an executor."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def deserialize(data: bytes) -> list[pa.RecordBatch]:
    return list(pa.ipc.open_stream(pa.py_buffer(data)))
