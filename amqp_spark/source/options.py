"""The options of the ``amqp`` source, each declared once (see ``amqp_spark.options``).

Named in the style of Spark's Kafka source. Parsing happens at ``load()`` (in
``DataSource.schema()``) and again where the reader is built, so a wrong option fails before
any connection is opened, with a message naming the option, the value and what is accepted.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from amqp_spark.options import (
    ADDRESSES,
    BOOLEAN,
    HTTP_URL,
    NAMES,
    STRING,
    URI,
    URI_ACCEPTED,
    OptionError,
    Parser,
    Refused,
    Requires,
    declared_options,
    integers,
    one_of,
    option,
    parse_options,
    password_option,
    raw_value,
    stream_uri_option,
    username_option,
    with_addresses,
)
from amqp_spark.source.limits import Limits
from amqp_spark.source.min_rows import DURATION
from amqp_spark.source.stream_queues import starting
from amqp_spark.stream_filter import StreamFilter

_ENDING_ACCEPTED = (
    "'next' (all that is there at planning) or a JSON object of exclusive end offsets per "
    "queue such as '{\"orders\": 100}'"
)


def _ending_offsets(value: str) -> str | dict[str, int]:
    """'next' or a JSON object of exclusive end offsets per queue."""
    if value.strip().lower() == "next":
        return "next"
    if value.strip().startswith("{"):
        try:
            per_queue = json.loads(value)
        except ValueError:
            raise Refused("it is not valid JSON") from None
        if (
            isinstance(per_queue, dict)
            and per_queue
            and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0
                for v in per_queue.values()
            )
        ):
            return {q: int(v) for q, v in per_queue.items()}
    raise Refused()


ENDING_OFFSETS = Parser(_ENDING_ACCEPTED, _ending_offsets)

_CHECKPOINT_ACCEPTED = (
    "the query's checkpoint directory, the path given to writeStream.option("
    "'checkpointLocation', ...): a local path or a file: URI such as 'file:///data/ck'"
)


def _checkpoint_location(value: str) -> Path:
    """A local path or a ``file:`` URI (whether it is a query's checkpoint directory is
    checked where it is used: Spark creates it only when the query starts)."""
    parts = urlsplit(value.strip())
    if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path:
        return Path(unquote(parts.path))
    if value.strip() and (not parts.scheme or len(parts.scheme) == 1):  # no scheme (or C:)
        return Path(value.strip())
    raise Refused()


CHECKPOINT_LOCATION = Parser(_CHECKPOINT_ACCEPTED, _checkpoint_location)


def _source_uri(value: str) -> str:
    """An AMQP URI the client accepts, query parameters included (``heartbeat=abc`` fails at
    ``load()``, not when the query starts). TLS files are not opened here: they need only
    exist where the connections are made."""
    from amqp_spark.client.parameters import parse_url

    uri = URI.read(value)
    tls = urlsplit(uri).scheme == "amqps"
    try:
        parse_url(uri, ssl_context=ssl.create_default_context() if tls else None)
    except ValueError as e:
        raise Refused(str(e)) from None
    return uri


SOURCE_URI = Parser(URI_ACCEPTED, _source_uri, redact=True)

#: The largest prefetch one AMQP consumer can have (basic.qos prefetch-count is a short).
CONSUMER_PREFETCH_MAX = 65535
#: The largest ``prefetch``: what the driver may hold unacked per classic queue.
PREFETCH_MAX = 16 * CONSUMER_PREFETCH_MAX

STREAM_PROTOCOLS = ("auto", "stream", "amqp")


_STREAM_ONLY = Requires(
    "queueType", ("stream",), "classic queues are consumed destructively and have no positions"
)


def _also_set(named: list[str]) -> str:
    """What is wrong with the queue-naming options ``named`` (not exactly one)."""
    if not named:
        return "none is set"
    others = " and ".join(repr(n) for n in named[1:])
    return f"{others} {'is' if len(named) == 2 else 'are'} also set"


@dataclass(frozen=True)
class SourceOptions:
    """The parsed, cross-checked options of one ``load()``: one field per option, declared
    with its parser, default and documentation (the README's table is made from these)."""

    uri: str = option(  # parsed: with ``addresses`` as its hosts (see ``parse``)
        "uri",
        SOURCE_URI,
        required=True,
        doc="`amqp://user:password@host:port/vhost` or `amqps://...`; query parameters "
        "`heartbeat`, `frame_max`, `channel_max`, `connection_timeout` (ms), "
        "`auth_mechanism` (`plain`, `amqplain`, `external`), and for amqps `cacertfile`, "
        "`certfile`, `keyfile`, `verify` (`verify_peer` / `verify_none`), "
        "`server_name_indication`. Passwords never appear in errors or logs.",
        details="`amqp://user:password@host:port/vhost` or `amqps://...`; query parameters "
        "`heartbeat`, `frame_max`, `channel_max`, `connection_timeout` as RabbitMQ URIs "
        "define them. Passwords are redacted in errors.",
    )
    username: str | None = username_option("source")
    password: str | None = password_option("source")
    addresses: str | None = option(
        "addresses",
        ADDRESSES,
        default_doc="the `uri`'s host",
        doc="the nodes of a RabbitMQ cluster, `host:port,host:port`: the first that answers "
        "is used, the next when its connection is lost; the `uri` still gives user, password, "
        "vhost and TLS",
        details="comma-separated `host:port` (a port left out is the `uri`'s; IPv6 as "
        "`[::1]:5672`), used instead of the `uri`'s host and port, which still gives user, "
        "password, vhost, TLS and query parameters. A connection goes to the first address "
        "that answers and, when it is lost, to the next; one attempt of "
        "`maxReconnectAttempts` tries every address. Errors name each address tried and why "
        "it failed. See docs/cluster.md.",
    )
    queues: tuple[str, ...] = option(
        "queue",
        NAMES,
        default=(),
        doc="one or more queue names, comma-separated; exactly one of `queue` / `exchange` / "
        "`superStream`",
        details="one or more queue names, comma-separated. Exactly one of `queue` / `exchange` / "
        "`superStream`.",
    )
    exchange: str | None = option(
        "exchange",
        STRING,
        doc="classic only: consume through a server-named exclusive queue bound to this "
        "exchange for the query",
        requires=Requires(
            "queueType",
            ("classic",),
            "the queue made for 'exchange' is a server-named classic queue; quorum and stream "
            "queries read named queues: use 'queue'",
        ),
        details="classic only: consume through a server-named, exclusive queue declared for the "
        "query and bound to this exchange.",
    )
    binding_keys: tuple[str, ...] = option(
        "bindingKeys",
        NAMES,
        default=("#",),
        default_doc="`#`",
        doc="with `exchange`: comma-separated binding keys",
        requires=Requires("exchange"),
        details="with `exchange`: comma-separated binding keys of that queue (`#` = everything on "
        "a topic exchange; ignored by fanout).",
    )
    queue_type: str = option(
        "queueType",
        one_of(("classic", "quorum", "stream")),
        default="classic",
        doc="`classic` or `quorum` (at-least-once, acked after Spark commits) or `stream` "
        "(replayable offsets)",
        details="`classic` (consumed destructively, at-least-once), `quorum` (read exactly as "
        "`classic`) or `stream` (RabbitMQ stream queues, replayable ranges). Not detected: "
        "AMQP 0-9-1 has no call that tells.",
    )
    filter_values: tuple[str, ...] | None = option(
        "filterValues",
        NAMES,
        default_doc="none",
        doc="streams: read only messages whose `x-stream-filter-value` is one of these "
        "(comma-separated); the broker skips chunks that cannot match (RabbitMQ 3.13+)",
        requires=_STREAM_ONLY,
        details="stream only: comma-separated values; only messages whose "
        "`x-stream-filter-value` header is one of them become rows. The broker (RabbitMQ "
        "3.13+, the bundled broker) skips the chunks whose filter cannot match, so a reader "
        "transfers a fraction of the stream; every delivery is checked again, so a row never "
        "arrives that does not match. RabbitMQ 3.10 ignores the filter: the rows are the same, "
        "read at the cost of the whole stream. See Stream filtering.",
    )
    match_unfiltered: bool = option(
        "matchUnfiltered",
        BOOLEAN,
        default=False,
        doc="with `filterValues`: also read messages that have no filter value",
        requires=Requires("filterValues"),
        details="with `filterValues`: also read the messages published without an "
        "`x-stream-filter-value` header (`x-stream-match-unfiltered`).",
    )
    prefetch: int = option(
        "prefetch",
        integers(1, PREFETCH_MAX),
        default=10000,
        default_doc="classic streams: from the sizes seen, at most 40000 messages (131070 on the "
        "bundled broker) and 128 MiB per query; otherwise `10000`",
        doc="`basic.qos` per consumer; for classic queues also the most messages the driver "
        "holds unacked per queue",
        details="1–1048560. Classic queues in a stream: how many messages the driver holds unacked "
        "per queue, hence the largest batch; one AMQP consumer may have at most 65535, so a "
        "larger window is shared by several consumers on the queue's channel (`basic.qos` of "
        "`prefetch / consumers` each; their deliveries share the channel's delivery tags, so "
        "offsets and acks are unchanged). Not set, a classic stream chooses each queue's window "
        "from the body sizes it sees: up to 40000 messages (131070 on the bundled broker, whose "
        "cost per message does not grow with the window), within 128 MiB of driver memory for "
        "the query's queues together (a held delivery counted as 400 B plus 1.5 times its body, "
        "the batch's Arrow copy included): 100 B messages get 40000, 10 KB 8,715, 1 MB 89 "
        "(see Batch size). Stream queues and batch reads: `basic.qos` of each consumer, at most "
        "65535 (default 10000).",
    )
    max_messages_per_trigger: int | None = option(
        "maxMessagesPerTrigger",
        integers(1),
        default_doc="classic: half the window (`prefetch / 2`) per queue; stream: none",
        doc="rows per micro-batch at most (admission control, `ReadMaxRows`)",
        details="rows per micro-batch at most (Spark admission control, `ReadMaxRows`). In a batch "
        "read of classic queues: messages read per queue at most.",
    )
    max_bytes_per_trigger: int | None = option(
        "maxBytesPerTrigger",
        integers(1),
        default_doc="none",
        doc="body bytes per micro-batch at most (`ReadMaxBytes`)",
        details="body bytes per micro-batch at most (`ReadMaxBytes`); a batch always takes at "
        "least one message. For streams estimated from the average message size seen: over AMQP "
        "0-9-1 the bodies the driver's tail receives, over the stream protocol the stored size "
        "of the messages (body and AMQP 1.0 sections) of the chunks the driver reads, so a "
        "batch there may hold a little less. Both limits may be given; both apply.",
    )
    min_messages_per_trigger: int | None = option(
        "minMessagesPerTrigger",
        integers(1),
        default_doc="none",
        doc="rows a micro-batch waits for, up to `maxTriggerDelay` (admission control, "
        "`ReadMinRows`)",
        details="as Kafka's `minOffsetsPerTrigger`: a micro-batch starts once this many "
        "messages are there, or once `maxTriggerDelay` passed since the last batch, whichever "
        "comes first (Spark's `ReadMinRows`). Ignored by AvailableNow and once runs, which read "
        "what there is. The minimum is compared with the batch the other limits allow "
        "(classic queues: `maxMessagesPerTrigger`, by default half the window per queue).",
    )
    max_trigger_delay: float = option(
        "maxTriggerDelay",
        DURATION,
        default=15 * 60.0,
        default_doc="`15m`",
        doc="with `minMessagesPerTrigger`: the longest a batch waits for them",
        requires=Requires("minMessagesPerTrigger"),
        details="with `minMessagesPerTrigger`, as Kafka's: the longest wait since the last "
        "batch before a smaller batch starts (`500ms`, `30s`, `15m`, `1h`).",
    )
    starting_offsets: starting.StartingOffsets = option(
        "startingOffsets",
        starting.STARTING_OFFSETS,
        default=starting.Next(),
        default_doc="`next` (batch reads: `first`)",
        doc="streams: `first`, `last`, `next`, an ISO-8601 timestamp, or per-queue JSON",
        requires=_STREAM_ONLY,
        details="stream only, for a query without checkpoint or a batch read: `first`, `last` (the "
        "last message), `next` (only new ones), an ISO-8601 timestamp "
        '(`2024-05-01T12:00:00Z`), or per queue JSON `{"orders": 42, "refunds": "first"}` '
        "(queues not named start at `next`).",
    )
    ending_offsets: str | dict[str, int] = option(
        "endingOffsets",
        ENDING_OFFSETS,
        default="next",
        doc="streams, batch reads: `next` (what is there at planning) or per-queue JSON",
        requires=_STREAM_ONLY,
        details="stream, batch reads only: `next` (what is there at planning) or per queue JSON of "
        "exclusive end offsets.",
    )
    fail_on_data_loss: bool = option(
        "failOnDataLoss",
        BOOLEAN,
        default=True,
        doc="streams: fail when retention removed offsets the query had not read yet; `false` "
        "logs them and goes on from the first available offset",
        requires=_STREAM_ONLY,
        details="stream only, as Kafka's: when retention (`x-max-age`, `x-max-length-bytes`) "
        "removed offsets the query had not read yet (it was stopped too long, or fell behind), "
        "`true` fails the query with a message naming the queue, the first missing and the "
        "first available offset; `false` logs the same and goes on from the first available "
        "offset.",
    )
    ack_batch_reads: bool = option(
        "ackBatchReads",
        BOOLEAN,
        default=False,
        doc="classic batch reads: `false` requeues what was read, `true` acks (consumes) it",
        details="classic, batch reads only: `false` requeues what was read (a peek; the messages "
        "come back with `redelivered=true`), `true` acks it (the read consumes the messages).",
    )
    poll_timeout_ms: int = option(
        "pollTimeoutMs",
        integers(1, 600_000),
        default=2000,
        doc="how long to wait for deliveries on their way",
        details="how long to wait for deliveries that are on their way (AvailableNow and once "
        "runs, batch reads, stream ranges: ×10 before failing).",
    )
    max_reconnect_attempts: int = option(
        "maxReconnectAttempts",
        integers(0, 100),
        default=5,
        doc="reconnects (0.5 s to 8 s apart) before the query fails naming the broker; "
        "with `addresses` each tries every address",
        details="connection attempts after the first, with a doubling pause from 0.5 s to 8 s; "
        "then the query fails with the broker named. With `addresses`, one attempt tries "
        "every address in turn (no pause between them).",
    )
    rows_per_partition: int = option(
        "rowsPerPartition",
        integers(1),
        default=100_000,
        doc="rows per Spark partition",
        details="rows per Spark partition (classic: per Arrow partition the driver ships; stream: "
        "per offset range an executor reads).",
    )
    checkpoint_location: Path | None = option(
        "checkpointLocation",
        CHECKPOINT_LOCATION,
        doc="classic queues: the query's checkpoint directory, needed by `trigger(once=True)` "
        "and, on PySpark 4.0 and 4.1, by every stream (see below)",
        details="the query's checkpoint directory, the same path as "
        '`writeStream.option("checkpointLocation", ...)`: a local path or a `file:` URI '
        "(`file:///data/ck`); other schemes are refused at `load()`. Needed by "
        "`trigger(once=True)` on classic queues (see Triggers), and on PySpark 4.0 and 4.1 by "
        "every classic-queue stream (docs/pyspark-versions.md), where the first batch fails "
        "if it is missing or names no query checkpoint (a `metadata` file in it). With other "
        "triggers, where given, the end of a run acks its last committed batch. Unused with "
        "stream queues.",
    )
    super_stream: str | None = option(
        "superStream",
        STRING,
        doc="read every partition of this super stream as one source (stream offsets per "
        "partition); instead of `queue`",
        requires=Requires(
            "queueType", ("stream",), "a super stream's partitions are stream queues"
        ),
        details="the name of a RabbitMQ super stream (`rabbitmq-streams add_super_stream`): "
        "its partition streams are read as one source, each with its own offsets, in "
        "parallel by the executors. Implies `queueType` `stream`; `startingOffsets` and "
        "`endingOffsets` take partition names (`invoices-0`) as keys. The partitions are "
        "found through `managementUrl` when given, else by their names (`<name>-0`, "
        "`<name>-1`, ...). See docs/super-streams.md.",
    )
    management_url: str | None = option(
        "managementUrl",
        HTTP_URL,
        default_doc="none",
        doc="with `superStream`: the management API (`http://host:15672`) that lists its "
        "partitions; else they are found by name",
        requires=Requires("superStream"),
        details="with `superStream`: the broker's management HTTP API (`http://host:15672`, "
        "the user and password of `uri`, `username` and `password`), which lists the super "
        "stream's bindings: needed for a super stream made with `--routing-keys`; without it "
        "(or when it does not answer) the partitions are `<name>-0`, `<name>-1`, ... as "
        "`--partitions` names them.",
    )
    stream_protocol: str = option(
        "streamProtocol",
        one_of(STREAM_PROTOCOLS),
        default="auto",
        doc="stream queues: `stream` (RabbitMQ's stream protocol, `streamUri`), `amqp` "
        "(AMQP 0-9-1) or `auto` (the stream protocol when the broker answers on it, else "
        "0-9-1; one log line says which and why)",
        requires=_STREAM_ONLY,
    )
    stream_uri: str | None = stream_uri_option(requires=_STREAM_ONLY)
    given: frozenset[str] = frozenset()  #: documented names of the options the user set

    @property
    def is_stream(self) -> bool:
        return self.queue_type == "stream"

    @property
    def stream_filter(self) -> StreamFilter | None:
        """``filterValues`` and ``matchUnfiltered``; None when no filter is asked for."""
        if not self.filter_values:
            return None
        return StreamFilter(self.filter_values, self.match_unfiltered)

    @property
    def stream_uri_for_connections(self) -> str:
        """``streamUri`` (with ``username`` and ``password``), else ``uri``'s (see
        ``default_stream_uri``)."""
        from amqp_spark.client.stream import default_stream_uri

        return self.stream_uri or default_stream_uri(self.uri)

    @property
    def poll_timeout(self) -> float:
        """Seconds to wait for deliveries known to be on their way."""
        return self.poll_timeout_ms / 1000

    @property
    def limits(self) -> Limits:
        """``maxMessagesPerTrigger`` and ``maxBytesPerTrigger``."""
        return Limits(self.max_messages_per_trigger, self.max_bytes_per_trigger)

    @property
    def consumer_prefetch(self) -> int:
        """The basic.qos of one consumer (a ``prefetch`` above what one consumer may have
        is, for classic queues in a stream, shared by several consumers of the queue)."""
        return min(self.prefetch, CONSUMER_PREFETCH_MAX)

    @classmethod
    def parse(cls, raw: Mapping[str, str], *, warn: bool = False) -> SourceOptions:
        """``warn``: about a password inside ``uri`` (see ``parse_options``)."""
        if raw_value(raw, "superStream") is not None and raw_value(raw, "queueType") is None:
            raw = {**raw, "queueType": "stream"}  # a super stream's partitions are streams
        values, given = parse_options(raw, declared_options(cls), side="source", warn=warn)
        # The URL the client connects with, carried to every connection the source opens
        # (driver and executors): with ``addresses``, every address is one of its hosts.
        values["uri"] = with_addresses(values["uri"], values["addresses"])
        parsed = cls(**values, given=given)
        named = [
            n
            for n, v in (
                ("queue", parsed.queues),
                ("exchange", parsed.exchange),
                ("superStream", parsed.super_stream),
            )
            if v
        ]
        if len(named) != 1:
            raise OptionError(
                "queue",
                ",".join(parsed.queues) or None,
                "exactly one of 'queue' (comma-separated names), 'exchange' (with "
                "'bindingKeys') or 'superStream'",
                _also_set(named),
            )
        if parsed.super_stream is not None:  # keys are checked once the partitions are known
            return parsed
        if isinstance(parsed.starting_offsets, starting.Offsets):
            _check_queues_named(
                parsed.queues, parsed.starting_offsets.per_queue, "startingOffsets", raw
            )
        if isinstance(parsed.ending_offsets, dict):
            _check_queues_named(parsed.queues, parsed.ending_offsets, "endingOffsets", raw)
        return parsed

    def query_checkpoint(self) -> Path | None:
        """``checkpointLocation`` once the query runs: Spark has created the directory and
        its ``metadata`` file at start, so a path without them is not this query's checkpoint
        (its commits would never be found and nothing would ever be acked)."""
        path = self.checkpoint_location
        if path is None or (path / "metadata").is_file():
            return path
        if not path.exists():
            problem = "it does not exist"
        elif not path.is_dir():
            problem = "it is not a directory"
        else:
            problem = "it holds no streaming query checkpoint (no 'metadata' file)"
        raise OptionError("checkpointLocation", str(path), _CHECKPOINT_ACCEPTED, problem)

    def check_partitions_named(self, partitions: tuple[str, ...]) -> None:
        """With ``superStream``: the per-queue keys of ``startingOffsets`` and
        ``endingOffsets`` are among its ``partitions``."""
        raw = {"startingOffsets": starting.to_json(self.starting_offsets)}
        if isinstance(self.ending_offsets, dict):
            raw["endingOffsets"] = json.dumps(self.ending_offsets, sort_keys=True)
        if isinstance(self.starting_offsets, starting.Offsets):
            _check_queues_named(partitions, self.starting_offsets.per_queue, "startingOffsets", raw)
        if isinstance(self.ending_offsets, dict):
            _check_queues_named(partitions, self.ending_offsets, "endingOffsets", raw)

    def start_of(self, queue: str) -> starting.QueueStart:
        """Where ``queue`` starts when the query has no checkpoint."""
        return starting.for_queue(self.starting_offsets, queue)


def _check_queues_named(
    queues: Sequence[str], per_queue: Mapping[str, object], name: str, raw: Mapping[str, str]
) -> None:
    """The keys of the per-queue option ``name`` are among the ``queues`` read."""
    unknown = sorted(set(per_queue) - set(queues))
    if unknown:
        raise OptionError(
            name,
            raw_value(raw, name),
            f"keys among the queues read: {list(queues)}",
            f"unknown queues {unknown}",
        )
