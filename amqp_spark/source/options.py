"""The options of the ``amqp`` source, declared once and parsed up front.

Named in the style of Spark's Kafka source. Parsing happens at ``load()`` (in
``DataSource.schema()``) and again where the reader is built, so a wrong option fails before
any connection is opened, with a message naming the option, the value and what is accepted.
"""

from __future__ import annotations

import datetime
import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from amqp_spark.options import (
    Option,
    OptionError,
    choice_parser,
    int_parser,
    parse_bool,
    parse_list,
    parse_options,
    parse_str,
    parse_uri,
    redact_uri,
)

#: Where a stream-queue read starts: a keyword, a timestamp, or per queue one of those or an
#: explicit offset.
StartSpec = str | datetime.datetime | int
STARTING_KEYWORDS = ("first", "last", "next")

_STARTING_ACCEPTED = (
    "'first', 'last', 'next', an ISO-8601 timestamp such as '2024-05-01T12:00:00Z', or a JSON "
    'object per queue such as \'{"orders": 42, "refunds": "first"}\''
)
_ENDING_ACCEPTED = (
    "'next' (all that is there at planning) or a JSON object of exclusive end offsets per "
    "queue such as '{\"orders\": 100}'"
)


def _parse_timestamp(text: str) -> datetime.datetime | None:
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def _parse_start_spec(name: str, value: object, accepted: str) -> StartSpec:
    if isinstance(value, bool):
        raise OptionError(name, value, accepted)
    if isinstance(value, int):
        if value < 0:
            raise OptionError(name, value, accepted)
        return value
    if isinstance(value, str):
        if value.strip().lower() in STARTING_KEYWORDS:
            return value.strip().lower()
        moment = _parse_timestamp(value.strip())
        if moment is not None:
            return moment
    raise OptionError(name, value, accepted)


def parse_starting_offsets(name: str, value: str) -> StartSpec | dict[str, StartSpec]:
    """A keyword or timestamp for every queue, or a JSON object of those / offsets per queue."""
    if value.strip().startswith("{"):
        per_queue = _json_object(name, value, _STARTING_ACCEPTED)
        return {
            q: _parse_start_spec(name, spec, _STARTING_ACCEPTED) for q, spec in per_queue.items()
        }
    return _parse_start_spec(name, value, _STARTING_ACCEPTED)


def parse_ending_offsets(name: str, value: str) -> str | dict[str, int]:
    """'next' or a JSON object of exclusive end offsets per queue."""
    if value.strip().lower() == "next":
        return "next"
    if value.strip().startswith("{"):
        per_queue = _json_object(name, value, _ENDING_ACCEPTED)
        if all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in per_queue.values()
        ):
            return {q: int(v) for q, v in per_queue.items()}
    raise OptionError(name, value, _ENDING_ACCEPTED)


_CHECKPOINT_ACCEPTED = (
    "the query's checkpoint directory, the path given to writeStream.option("
    "'checkpointLocation', ...): a local path or a file: URI such as 'file:///data/ck'"
)


def parse_checkpoint_location(name: str, value: str) -> Path:
    """A local path or a ``file:`` URI (whether it is a query's checkpoint directory is
    checked where it is used: Spark creates it only when the query starts)."""
    parts = urlsplit(value.strip())
    if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path:
        return Path(unquote(parts.path))
    if value.strip() and (not parts.scheme or len(parts.scheme) == 1):  # no scheme (or C:)
        return Path(value.strip())
    raise OptionError(name, value, _CHECKPOINT_ACCEPTED)


def _json_object(name: str, value: str, accepted: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError:
        raise OptionError(name, value, accepted, "it is not valid JSON") from None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(name, value, accepted)
    return parsed


_URI_ACCEPTED = "amqp://user:password@host:port/vhost or amqps://..."


def parse_source_uri(name: str, value: str) -> str:
    """An AMQP URI the client accepts, query parameters included (``heartbeat=abc`` fails at
    ``load()``, not when the query starts). TLS files are not opened here: they need only
    exist where the connections are made."""
    from amqp_spark.client.parameters import parse_url

    uri = parse_uri(name, value)
    tls = urlsplit(uri).scheme == "amqps"
    try:
        parse_url(uri, ssl_context=ssl.create_default_context() if tls else None)
    except ValueError as e:
        raise OptionError(name, redact_uri(uri), _URI_ACCEPTED, str(e)) from None
    return uri


#: The largest prefetch one AMQP consumer can have (basic.qos prefetch-count is a short).
CONSUMER_PREFETCH_MAX = 65535
#: The largest ``prefetch``: what the driver may hold unacked per classic queue.
PREFETCH_MAX = 16 * CONSUMER_PREFETCH_MAX

SOURCE_OPTIONS: tuple[Option[Any], ...] = (
    Option("uri", parse_source_uri, required=True, doc=_URI_ACCEPTED),
    Option("queue", parse_list, doc="comma-separated queue names"),
    Option("exchange", parse_str, doc="consume through a server-named queue bound to it"),
    Option("bindingKeys", parse_list, default=("#",), doc="binding keys of that queue"),
    Option("queueType", choice_parser("classic", "quorum", "stream"), default="classic"),
    Option("prefetch", int_parser(1, PREFETCH_MAX), default=10000),
    Option("maxMessagesPerTrigger", int_parser(1)),
    Option("maxBytesPerTrigger", int_parser(1)),
    Option("startingOffsets", parse_starting_offsets, default="next"),
    Option("endingOffsets", parse_ending_offsets, default="next"),
    Option("ackBatchReads", parse_bool, default=False),
    Option("pollTimeoutMs", int_parser(1, 600_000), default=2000),
    Option("maxReconnectAttempts", int_parser(0, 100), default=5),
    Option("rowsPerPartition", int_parser(1), default=100_000),
    Option("checkpointLocation", parse_checkpoint_location),
)


@dataclass(frozen=True)
class SourceOptions:
    """The parsed, cross-checked options of one ``load()``."""

    uri: str
    queues: tuple[str, ...]  #: empty when consuming through ``exchange``
    exchange: str | None
    binding_keys: tuple[str, ...]
    queue_type: str  #: "classic" or "stream"
    prefetch: int
    max_messages_per_trigger: int | None
    max_bytes_per_trigger: int | None
    starting_offsets: StartSpec | dict[str, StartSpec]
    ending_offsets: str | dict[str, int]
    ack_batch_reads: bool
    poll_timeout: float  #: seconds to wait for deliveries known to be on their way
    max_reconnect_attempts: int
    rows_per_partition: int
    checkpoint_location: Path | None  #: classic queues, trigger(once=True): see stream_reader
    given: frozenset[str]  #: documented names of the options the user set

    @property
    def is_stream(self) -> bool:
        return self.queue_type == "stream"

    @property
    def consumer_prefetch(self) -> int:
        """The basic.qos of one consumer (a ``prefetch`` above what one consumer may have
        is, for classic queues in a stream, shared by several consumers of the queue)."""
        return min(self.prefetch, CONSUMER_PREFETCH_MAX)

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> SourceOptions:
        p = parse_options(raw, SOURCE_OPTIONS, side="source")
        given = frozenset(name for name in p if name.lower() in {k.lower() for k in raw})
        if (p["queue"] is None) == (p["exchange"] is None):
            raise OptionError(
                "queue",
                p["queue"] and ",".join(p["queue"]),
                "exactly one of 'queue' (comma-separated names) or 'exchange' (with 'bindingKeys')",
                "'exchange' is also set" if p["queue"] else "neither is set",
            )
        if "bindingKeys" in given and p["exchange"] is None:
            raise OptionError("bindingKeys", ",".join(p["bindingKeys"]), "only with 'exchange'")
        is_stream = p["queueType"] == "stream"
        if p["queueType"] != "classic" and p["exchange"] is not None:
            raise OptionError(
                "exchange",
                p["exchange"],
                "only with queueType 'classic'",
                f"the queue made for 'exchange' is a server-named classic queue; a "
                f"{p['queueType']} query reads named queues: use 'queue'",
            )
        for name in ("startingOffsets", "endingOffsets"):
            if name in given and not is_stream:
                raise OptionError(
                    name,
                    raw_value(raw, name),
                    "only with queueType 'stream'",
                    "classic queues are consumed destructively and have no positions",
                )
        _check_queues_named(p["startingOffsets"], p["queue"] or (), "startingOffsets", raw)
        _check_queues_named(p["endingOffsets"], p["queue"] or (), "endingOffsets", raw)
        return cls(
            uri=p["uri"],
            queues=tuple(p["queue"] or ()),
            exchange=p["exchange"],
            binding_keys=tuple(p["bindingKeys"]),
            # A quorum queue is consumed exactly as a classic one (acked at Spark's commit).
            queue_type="stream" if is_stream else "classic",
            prefetch=p["prefetch"],
            max_messages_per_trigger=p["maxMessagesPerTrigger"],
            max_bytes_per_trigger=p["maxBytesPerTrigger"],
            starting_offsets=p["startingOffsets"],
            ending_offsets=p["endingOffsets"],
            ack_batch_reads=p["ackBatchReads"],
            poll_timeout=p["pollTimeoutMs"] / 1000,
            max_reconnect_attempts=p["maxReconnectAttempts"],
            rows_per_partition=p["rowsPerPartition"],
            checkpoint_location=p["checkpointLocation"],
            given=given,
        )

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

    def start_spec(self, queue: str) -> StartSpec:
        """Where ``queue`` starts when the query has no checkpoint (queues missing from a
        per-queue JSON start at 'next')."""
        spec = self.starting_offsets
        return spec.get(queue, "next") if isinstance(spec, dict) else spec


def raw_value(raw: Mapping[str, str], name: str) -> str | None:
    """The value the user gave for ``name`` (keys arrive lower-cased)."""
    return next((v for k, v in raw.items() if k.lower() == name.lower()), None)


def _check_queues_named(
    spec: object, queues: tuple[str, ...], name: str, raw: Mapping[str, str]
) -> None:
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(queues))
        if unknown:
            raise OptionError(
                name,
                raw_value(raw, name),
                f"keys among the queues read: {list(queues)}",
                f"unknown queues {unknown}",
            )
