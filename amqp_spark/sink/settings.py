"""The sink's options: declared once, parsed up front so a bad one fails at query start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from amqp_spark.options import (
    Option,
    choice_parser,
    int_parser,
    parse_bool,
    parse_options,
    parse_uri,
)

#: AMQP delivery-mode values by the names the ``deliveryMode`` option accepts.
DELIVERY_MODES = {"transient": 1, "persistent": 2, "1": 1, "2": 2}


def parse_any_str(name: str, value: str) -> str:
    """Any string, the empty one included: ``""`` is the default exchange / an empty key."""
    return value


def parse_delivery_mode(name: str, value: str) -> int:
    """``persistent``/``transient`` or the numbers 2/1; choice_parser returns a key of the map."""
    return DELIVERY_MODES[choice_parser(*DELIVERY_MODES)(name, value)]


SINK_OPTIONS: tuple[Option[Any], ...] = (
    Option("uri", parse_uri, required=True, doc="amqp://user:password@host:port/vhost"),
    Option(
        "exchange",
        parse_any_str,
        doc="the exchange every row goes to; overrides an `exchange` column. Default: the "
        "column, else the default exchange ''",
    ),
    Option(
        "routingKey",
        parse_any_str,
        doc="a fixed routing key; overrides a `routing_key` column. Default: the column, else ''",
    ),
    Option("mandatory", parse_bool, default=False, doc="fail the task on an unroutable message"),
    Option(
        "deliveryMode",
        parse_delivery_mode,
        default=2,
        doc="persistent (2) or transient (1), for rows without a delivery_mode value",
    ),
    Option("confirm", parse_bool, default=True, doc="publisher confirms"),
    Option(
        "maxInFlight", int_parser(1, 1_000_000), default=5000, doc="outstanding confirms per task"
    ),
    Option(
        "ignoreExtraColumns",
        parse_bool,
        default=False,
        doc="ignore (with a logged note) columns the sink does not know instead of failing",
    ),
)


@dataclass(frozen=True)
class SinkSettings:
    """The parsed options of one write. Picklable: it travels to the executors."""

    uri: str
    exchange: str | None
    routing_key: str | None
    mandatory: bool
    delivery_mode: int
    confirm: bool
    max_in_flight: int
    ignore_extra_columns: bool

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> SinkSettings:
        opts = parse_options(raw, SINK_OPTIONS, side="sink")
        return cls(
            uri=opts["uri"],
            exchange=opts["exchange"],
            routing_key=opts["routingKey"],
            mandatory=opts["mandatory"],
            delivery_mode=opts["deliveryMode"],
            confirm=opts["confirm"],
            max_in_flight=opts["maxInFlight"],
            ignore_extra_columns=opts["ignoreExtraColumns"],
        )
