"""Which DataFrame columns the sink writes, checked against the source's schema at start.

The sink accepts the columns of the source's schema (``amqp_spark.schema``) under the same
names, so a DataFrame read from the source can be written back unchanged. Columns that
describe a received message (``queue``, ``delivery_tag``, ``redelivered``, ``offset``) are
accepted and ignored. Any other column is refused unless ``ignoreExtraColumns`` is set: a
misspelt ``routingkey`` column silently ignored would send every row to the wrong place.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from typing import Any

from amqp_spark.schema import COLUMNS

from .settings import SinkSettings

log = logging.getLogger(__name__)

#: Columns of the source's schema that say how a message was received, not what to send.
RECEIVE_ONLY: tuple[str, ...] = ("queue", "delivery_tag", "redelivered", "offset")

#: Types accepted besides the schema's own, by the schema's type of the column.
_WIDENED: dict[str, tuple[str, ...]] = {
    "binary": ("string",),  # body: a string is sent as its UTF-8 bytes
    "int": ("tinyint", "smallint", "bigint"),  # range-checked per row when written
    "timestamp": ("timestamp_ntz",),
}

#: The sink's column that is not in the source's schema: the ``x-stream-filter-value``
#: header of each message (stream filtering), as the ``filterValue`` option sets it for all.
FILTER_VALUE_COLUMN = "filter_value"

#: Column name -> accepted Spark SQL types (``DataType.simpleString()``), in schema order.
ACCEPTED: dict[str, tuple[str, ...]] = {
    **{
        name: (sql_type, *_WIDENED.get(sql_type, ()))
        for name, sql_type, _ in COLUMNS
        if name not in RECEIVE_ONLY
    },
    FILTER_VALUE_COLUMN: ("string",),
}

#: Columns whose values go into the message's content properties (same names as AMQP's).
PROPERTY_COLUMNS: tuple[str, ...] = tuple(
    name
    for name in ACCEPTED
    if name not in ("body", "routing_key", "exchange", FILTER_VALUE_COLUMN)
)


class SchemaError(ValueError):
    """The DataFrame's columns do not fit the sink; says what is expected and what was given."""


@dataclass(frozen=True)
class ColumnPlan:
    """Where each column the sink writes is in the DataFrame. Picklable."""

    index: dict[str, int]  #: accepted column name -> position in the record batches
    body_is_string: bool

    def has(self, name: str) -> bool:
        return name in self.index


def expected_columns() -> str:
    """The accepted columns and types, for error messages and docs."""
    parts = [f"{name} {'|'.join(types)}" for name, types in ACCEPTED.items()]
    return "body (required) and optionally: " + ", ".join(parts[1:]) + f"; body is {parts[0]}"


def plan_columns(schema: Any, settings: SinkSettings) -> ColumnPlan:
    """Check ``schema`` (a ``StructType``) and map the accepted columns to their positions.

    Names match case-insensitively, as Spark resolves columns. Raises ``SchemaError``
    listing every problem at once.
    """
    problems: list[str] = []
    index: dict[str, int] = {}
    extra: list[str] = []
    seen: dict[str, str] = {}
    for position, field in enumerate(schema.fields):
        name = field.name.lower()
        if name in seen:
            problems.append(f"columns '{seen[name]}' and '{field.name}' both mean '{name}'")
            continue
        seen[name] = field.name
        if name in RECEIVE_ONLY:
            continue
        accepted = ACCEPTED.get(name)
        if accepted is None:
            extra.append(field.name)
            continue
        given = field.dataType.simpleString()
        if given not in accepted:
            problems.append(f"column '{field.name}' is {given}, expected {' or '.join(accepted)}")
            continue
        index[name] = position
    if "body" not in seen:
        problems.append("column 'body' is missing")
    if extra and not settings.ignore_extra_columns:
        problems.extend(_unknown_column(name) for name in extra)
        problems.append("(set the option ignoreExtraColumns=true to ignore unknown columns)")
    if problems:
        raise SchemaError(
            "amqp sink: the DataFrame does not fit: "
            + "; ".join(problems)
            + f". Expected: {expected_columns()}. Given: {schema.simpleString()}"
        )
    if extra:
        log.info("amqp sink: ignoring columns %s (ignoreExtraColumns=true)", extra)
    for name, option, value in (
        ("exchange", "exchange", settings.exchange),
        ("routing_key", "routingKey", settings.routing_key),
        (FILTER_VALUE_COLUMN, "filterValue", settings.filter_value),
    ):
        if value is not None and index.pop(name, None) is not None:
            log.info("amqp sink: option %s=%r overrides the column '%s'", option, value, name)
    body_type = schema.fields[index["body"]].dataType.simpleString()
    return ColumnPlan(index=index, body_is_string=body_type == "string")


def _unknown_column(name: str) -> str:
    close = difflib.get_close_matches(name.lower(), ACCEPTED, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"column '{name}' is not a sink column{hint}"
