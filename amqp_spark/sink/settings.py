"""The sink's options, each declared once (see ``amqp_spark.options``), parsed up front so
a bad one fails at query start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from amqp_spark.options import (
    ADDRESSES,
    ANY_STRING,
    BOOLEAN,
    HTTP_URL,
    STRING,
    URI,
    OptionError,
    Requires,
    declared_options,
    integers,
    one_of,
    option,
    parse_options,
    password_option,
    raw_value,
    redact_uri,
    stream_uri_option,
    username_option,
    with_addresses,
)

#: How ``superStream`` is written: ``streamProtocol``'s values.
STREAM_PROTOCOLS = ("amqp", "stream")

#: AMQP delivery-mode values by the names the ``deliveryMode`` option accepts.
DELIVERY_MODES = {"transient": 1, "persistent": 2, "1": 1, "2": 2}


@dataclass(frozen=True)
class SinkSettings:
    """The parsed options of one write: one field per option. Picklable: it travels to the
    executors."""

    uri: str = option(  # parsed: with ``addresses`` as its hosts (see ``parse``)
        "uri",
        URI,
        required=True,
        doc="as for the source",
        details="`amqp://user:password@host:port/vhost` or `amqps://...`; query parameters as "
        "RabbitMQ URIs define them (`heartbeat`, `connection_timeout`, ...)",
    )
    username: str | None = username_option("sink")
    password: str | None = password_option("sink")
    addresses: str | None = option(
        "addresses",
        ADDRESSES,
        default_doc="the `uri`'s host",
        doc="as for the source: a task whose connection is lost publishes what was not "
        "confirmed again on the next node",
        details="comma-separated `host:port` of a cluster's nodes, as for the source. A task "
        "whose connection is lost reconnects to the next address that answers and publishes "
        "again every message the broker had not confirmed (under the same `message_id`); it "
        "fails only when no address answers within `maxReconnectAttempts`. See "
        "docs/cluster.md.",
    )
    exchange: str | None = option(
        "exchange",
        ANY_STRING,
        default_doc="the `exchange` column, else the default exchange",
        doc="every row's exchange (overrides the column)",
        details="the exchange every row goes to; when set it **overrides** an `exchange` column "
        "(as Kafka's `topic` option does)",
    )
    routing_key: str | None = option(
        "routingKey",
        ANY_STRING,
        default_doc='the `routing_key` column, else `""`',
        doc="a fixed routing key (overrides the column)",
        details="a fixed routing key; when set it **overrides** a `routing_key` column",
    )
    filter_value: str | None = option(
        "filterValue",
        ANY_STRING,
        default_doc="the `filter_value` column, else none",
        doc="stream filtering: every row's `x-stream-filter-value` header (overrides the column)",
        details="the `x-stream-filter-value` header of every message (RabbitMQ 3.13+ stream "
        "filtering: readers with `filterValues` get only matching messages); when set it "
        "**overrides** a `filter_value` column. A null column value sets no header",
    )
    mandatory: bool = option(
        "mandatory",
        BOOLEAN,
        default=False,
        doc="an unroutable message is returned and fails the task",
        details="publish mandatory: a message no queue receives is returned and **fails the task**",
    )
    delivery_mode: int = option(
        "deliveryMode",
        one_of(DELIVERY_MODES, DELIVERY_MODES),
        default=2,
        default_doc="`persistent`",
        doc="`persistent` or `transient`, for rows without `delivery_mode`",
        details="`persistent` (2) or `transient` (1), for rows without a `delivery_mode` value",
    )
    confirm: bool = option(
        "confirm",
        BOOLEAN,
        default=True,
        doc="publisher confirms: a batch is committed only when every row is confirmed",
        details="publisher confirms; see the guarantee below for what `false` gives up",
    )
    max_in_flight: int = option(
        "maxInFlight",
        integers(1, 1_000_000),
        default=5000,
        doc="unconfirmed messages a task may have outstanding",
        details="unconfirmed messages a task may have outstanding before it waits",
    )
    max_reconnect_attempts: int = option(
        "maxReconnectAttempts",
        integers(0, 100),
        default=5,
        doc="reconnects of a task (0.5 s to 8 s apart) before it fails; each tries every address",
        details="connection attempts of a task after the first, with a doubling pause from "
        "0.5 s to 8 s, each trying every address; then the task fails naming every address "
        "and why. Needs `confirm` to publish again what the lost connection had not "
        "confirmed: without confirms a lost connection fails the task.",
    )
    ignore_extra_columns: bool = option(
        "ignoreExtraColumns",
        BOOLEAN,
        default=False,
        doc="drop (and log) unknown columns instead of failing",
        details="ignore (with a logged note) columns the sink does not know instead of failing",
    )
    super_stream: str | None = option(
        "superStream",
        STRING,
        default_doc="none",
        doc="write to this super stream: each row to one partition by its routing key "
        "(`superStreamRouting`)",
        details="the name of a RabbitMQ super stream: every row is published to its exchange "
        "with the binding key of the partition its routing key (column or `routingKey`) "
        "picks, as RabbitMQ's stream clients pick it; the `exchange` option is refused and an "
        "`exchange` column ignored. See docs/super-streams.md",
    )
    super_stream_routing: str = option(
        "superStreamRouting",
        one_of(("hash", "key")),
        default="hash",
        doc="with `superStream`: `hash` (MurmurHash3 of the key, as the stream clients) or "
        "`key` (the key is a partition's binding key)",
        requires=Requires("superStream"),
        details="with `superStream`: `hash` spreads keys over the partitions by MurmurHash3 "
        "(seed 104729) modulo their number, in partition order, as the Java stream client; "
        "`key` takes the routing key as the binding key (super streams made with "
        "`--routing-keys`), a key no partition is bound with failing the task",
    )
    management_url: str | None = option(
        "managementUrl",
        HTTP_URL,
        default_doc="none",
        doc="with `superStream`: the management API that lists its partitions",
        requires=Requires("superStream"),
        details="with `superStream`: the management HTTP API (`http://host:15672`, the user "
        "and password of `uri`, `username` and `password`) that lists the partitions; else "
        "(or when it does not answer) they are `<name>-0`, `<name>-1`, ... with binding keys "
        "`0`, `1`, ...",
    )

    stream: str | None = option(
        "stream",
        STRING,
        default_doc="none",
        doc="write every row to this stream queue over RabbitMQ's stream protocol "
        "(`streamUri`), exactly once (see the guarantee)",
        details="the name of a stream queue: every row is published to it over RabbitMQ's "
        "stream protocol (`streamUri`), with publisher deduplication, so that a retried task, "
        "a retried batch or a restarted query stores no row twice (see the guarantee below). "
        "`exchange`, `routingKey`, `superStream` and `mandatory` do not apply; "
        "`confirm` must stay `true`. A task whose connection is lost goes on through the "
        "next node of `streamUri` (by default every host of `addresses` on port 5552) and "
        "sends again only what the stream does not hold",
    )
    stream_protocol: str = option(
        "streamProtocol",
        one_of(STREAM_PROTOCOLS),
        default="amqp",
        doc="with `superStream`: `stream` writes its partitions over the stream protocol, "
        "exactly once as `stream` does; `amqp` over AMQP 0-9-1",
        requires=Requires("superStream"),
    )
    stream_uri: str | None = stream_uri_option()

    @property
    def over_stream_protocol(self) -> bool:
        """Whether rows go over RabbitMQ's stream protocol (``stream``, or ``superStream``
        with ``streamProtocol`` 'stream')."""
        return self.stream is not None or self.stream_protocol == "stream"

    @property
    def stream_uri_for_connections(self) -> str:
        """``streamUri`` (with ``username`` and ``password``), else ``uri``'s."""
        from amqp_spark.client.stream import default_stream_uri

        return self.stream_uri or default_stream_uri(self.uri)

    @classmethod
    def parse(cls, raw: Mapping[str, str], *, warn: bool = False) -> SinkSettings:
        """``warn``: about a password inside ``uri`` (see ``parse_options``)."""
        values, _ = parse_options(raw, declared_options(cls), side="sink", warn=warn)
        # The URL the client connects with: with ``addresses``, every address is a host.
        values["uri"] = with_addresses(values["uri"], values["addresses"])
        if values["super_stream"] is not None:
            if values["exchange"] is not None:
                raise OptionError(
                    "exchange",
                    values["exchange"],
                    "no 'exchange' with 'superStream' (the super stream's exchange is used)",
                    "set one of the two",
                )
            values["exchange"] = values["super_stream"]
        parsed = cls(**values)
        parsed.check_stream_protocol(raw)
        return parsed

    def check_stream_protocol(self, raw: Mapping[str, str]) -> None:
        """What the stream-protocol writer cannot honour fails at start."""
        if self.stream is not None:
            clash = "superStream" if self.super_stream is not None else "exchange"
            given = raw_value(raw, clash)
            if given is not None:
                raise OptionError(clash, given, f"no '{clash}' with 'stream'", "set one of the two")
        if not self.over_stream_protocol:
            if self.stream_uri is not None:
                raise OptionError(
                    "streamUri",
                    redact_uri(self.stream_uri),
                    "only with 'stream', or 'superStream' with streamProtocol 'stream'",
                )
            return
        if not self.confirm:
            raise OptionError(
                "confirm",
                raw_value(raw, "confirm"),
                "true with 'stream' or streamProtocol 'stream'",
                "the stream writer counts on confirms for exactly once",
            )
