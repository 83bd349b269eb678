"""Arrow record batches -> the messages to publish, column by column.

Each column is validated and converted to a Python list with one Arrow call; the only
per-row Python work left is assembling a message from the lists, which the publisher
needs anyway. Converting to Spark ``Row`` objects first is about five times slower.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby, repeat
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from amqp_protocol import SPEC_0_9_1, Properties
from amqp_spark.schema import STRING_PROPERTIES
from amqp_spark.stream_filter import FILTER_VALUE_HEADER

from . import super_stream
from .columns import FILTER_VALUE_COLUMN, PROPERTY_COLUMNS, ColumnPlan
from .settings import SinkSettings

BasicProperties: type[Properties] = SPEC_0_9_1.properties("basic")

#: Largest value of an AMQP octet (delivery_mode, priority) and of a short string's length.
_OCTET_MAX = 255


#: (routing_key, body, properties), as ``Channel.basic_publish_batch`` takes them.
Publish = tuple[str, bytes, Properties]


class ExchangeRun(NamedTuple):
    """Consecutive messages for one exchange (``basic_publish_batch`` takes one exchange)."""

    exchange: str
    messages: list[Publish]


class RowError(ValueError):
    """A row's value cannot be sent; names the column, the row and what is accepted."""


@dataclass(frozen=True)
class MessageIds:
    """Deterministic message ids ``<query>:<batch>:<partition>:<row>``.

    A retried task (or a failed micro-batch replayed after a restart) publishes the same
    rows under the same ids, so consumers can drop duplicates. ``row`` counts the rows of
    the task's partition from 0.
    """

    query: str
    batch: int
    partition: int

    def for_rows(self, start: int, count: int) -> list[str]:
        prefix = f"{self.query}:{self.batch}:{self.partition}:"
        return [prefix + str(row) for row in range(start, start + count)]


def to_messages(
    batch: pa.RecordBatch,
    plan: ColumnPlan,
    settings: SinkSettings,
    ids: MessageIds,
    first_row: int,
) -> list[ExchangeRun]:
    """The messages of ``batch``, whose first row is row ``first_row`` of the partition, in
    row order. Per-row loops run in C (``map``/``zip``): this is the sink's hot path."""
    count = batch.num_rows
    where = _RowLocator(first_row)
    body = batch.column(plan.index["body"])
    if body.null_count:
        raise RowError(f"amqp sink: column 'body' is null at row {where.first_null(body)}")
    if plan.body_is_string:
        body = body.cast(pa.binary())
    bodies = body.to_pylist()
    keys = _address(batch, plan, "routing_key", settings.routing_key, where)
    if settings.super_stream is not None:
        keys = super_stream.binding_keys(keys, settings, first_row)

    values: dict[str, list[Any]] = {
        name: _CONVERTERS[name](batch.column(plan.index[name]), name, where)
        for name in PROPERTY_COLUMNS
        if plan.has(name)
    }
    generated = ids.for_rows(first_row, count)
    values["message_id"] = _fill_nulls(values.get("message_id"), generated)
    values["delivery_mode"] = _fill_nulls(
        values.get("delivery_mode"), repeat(settings.delivery_mode, count)
    )
    properties = list(map(BasicProperties.__new__, repeat(BasicProperties, count)))
    for name in BasicProperties.field_names:
        column = values.get(name)
        _consume(map(setattr, properties, repeat(name), repeat(None) if column is None else column))
    _set_filter_values(properties, batch, plan, settings)
    messages = list(zip(keys, bodies, properties, strict=True))

    if settings.exchange is not None or not plan.has("exchange"):
        return [ExchangeRun(settings.exchange or "", messages)]
    exchanges = _address(batch, plan, "exchange", None, where)
    runs: list[ExchangeRun] = []
    start = 0
    for exchange, run in groupby(exchanges):
        size = sum(1 for _ in run)
        runs.append(ExchangeRun(exchange, messages[start : start + size]))
        start += size
    return runs


def _set_filter_values(
    properties: list[Any],
    batch: pa.RecordBatch,
    plan: ColumnPlan,
    settings: SinkSettings,
) -> None:
    """The ``x-stream-filter-value`` header: the ``filterValue`` option for every row, else
    the ``filter_value`` column's value (null: none)."""
    if settings.filter_value is not None:
        values: list[str | None] = [settings.filter_value] * batch.num_rows
    elif plan.has(FILTER_VALUE_COLUMN):
        values = batch.column(plan.index[FILTER_VALUE_COLUMN]).to_pylist()
    else:
        return
    for props, value in zip(properties, values, strict=True):
        if value is not None:
            props.headers = {**(props.headers or {}), FILTER_VALUE_HEADER: value}


def _fill_nulls(column: list[Any] | None, fill: Iterable[Any]) -> list[Any]:
    """``fill`` where ``column`` is absent or null."""
    if column is None:
        return list(fill)
    return [f if value is None else value for value, f in zip(column, fill, strict=False)]


def _consume(iterator: Iterator[Any]) -> None:
    deque(iterator, maxlen=0)


class _RowLocator:
    """Turns a position in a record batch into the row number of the partition."""

    def __init__(self, first_row: int) -> None:
        self.first_row = first_row

    def first_null(self, column: pa.Array) -> int:
        return self.first_row + _first_index(column.is_null())

    def first(self, mask: pa.Array) -> int:
        return self.first_row + _first_index(mask)


def _first_index(mask: pa.Array) -> int:
    return int(pc.index(mask, True).as_py())


def _address(
    batch: pa.RecordBatch, plan: ColumnPlan, name: str, fixed: str | None, where: _RowLocator
) -> list[str]:
    """Exchange or routing key per row: the option if set, else the column (null -> '')."""
    if fixed is not None or not plan.has(name):
        return [fixed or ""] * batch.num_rows
    column = batch.column(plan.index[name])
    if column.null_count:
        column = pc.fill_null(column, "")
    return _short_strings(column, name, where)  # type: ignore[return-value]


def _short_strings(column: pa.Array, name: str, where: _RowLocator) -> list[str | None]:
    too_long = pc.greater(pc.binary_length(column), _OCTET_MAX)
    if pc.any(too_long).as_py():
        row = where.first(pc.fill_null(too_long, False))
        raise RowError(
            f"amqp sink: column '{name}' at row {row} is longer than {_OCTET_MAX} bytes, "
            "the limit of an AMQP short string"
        )
    values: list[str | None] = column.to_pylist()
    return values


def _octets(column: pa.Array, name: str, where: _RowLocator) -> list[int | None]:
    out_of_range = pc.or_(pc.less(column, 0), pc.greater(column, _OCTET_MAX))
    if pc.any(out_of_range).as_py():
        row = where.first(pc.fill_null(out_of_range, False))
        raise RowError(
            f"amqp sink: column '{name}' at row {row} is {column[row - where.first_row]}, "
            f"expected 0 to {_OCTET_MAX} (an AMQP octet)"
        )
    values: list[int | None] = column.to_pylist()
    return values


def _seconds(column: pa.Array, name: str, where: _RowLocator) -> list[int | None]:
    """AMQP timestamps are whole seconds since the epoch (sub-seconds are dropped)."""
    micros = column.cast(pa.int64())
    values: list[int | None] = (
        pc.floor(pc.divide(micros.cast(pa.float64()), 1e6)).cast(pa.int64()).to_pylist()
    )
    return values


def _headers(column: pa.Array, name: str, where: _RowLocator) -> list[dict[str, Any] | None]:
    """A map<string,string> becomes a field table of string values (null map: no headers)."""
    return [None if pairs is None else dict(pairs) for pairs in column.to_pylist()]


_Converter = Callable[[pa.Array, str, _RowLocator], list[Any]]
_CONVERTERS: dict[str, _Converter] = {
    **{name: _short_strings for name in STRING_PROPERTIES},
    "delivery_mode": _octets,
    "priority": _octets,
    "timestamp": _seconds,
    "headers": _headers,
}
