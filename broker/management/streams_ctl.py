"""``amqp-broker streams VERB ...``: ``rabbitmq-streams``' super stream commands, with its
flags, over the management HTTP API (as ``amqp-broker ctl`` serves ``rabbitmqctl``'s).

``add_super_stream invoices --partitions 3`` declares what RabbitMQ 4.0.5's does (measured):
a durable direct exchange ``invoices`` with ``x-super-stream: true``; durable stream queues
``invoices-0`` .. ``invoices-2`` with ``x-queue-leader-locator: balanced``; a binding from
the exchange to each with routing key ``0`` .. ``2`` and the binding argument
``x-stream-partition-order`` 0 .. 2. ``--routing-keys amer,emea`` (or ``--binding-keys``,
as RabbitMQ's help names it) makes ``invoices-amer``, ``invoices-emea`` bound with those keys
in that order. ``--max-length-bytes 20gb``, ``--max-age PT10M30S``,
``--stream-max-segment-size-bytes 500mb``, ``--leader-locator``, ``--initial-cluster-size``
become the queues' ``x-max-length-bytes: 20000000000``, ``x-max-age: '630s'``,
``x-stream-max-segment-size-bytes: 500000000``, ``x-queue-leader-locator`` and
``x-initial-cluster-size``, as RabbitMQ turns them. ``delete_super_stream`` deletes the
partition streams the exchange is bound to and the exchange. Exit status as ``ctl``'s.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from .ctl import DEFAULT_URL, EX_USAGE, Api, CtlError, q, run_verb

#: The exchange argument that marks a super stream, and the binding argument ordering it
#: (the connector's ``amqp_spark.super_streams`` reads them; the broker stands alone).
SUPER_STREAM_ARGUMENT = "x-super-stream"
PARTITION_ORDER_ARGUMENT = "x-stream-partition-order"

#: Size units of ``--max-length-bytes`` and ``--stream-max-segment-size-bytes``: RabbitMQ
#: 4.0.5 turned ``20gb`` into 20000000000 and ``500mb`` into 500000000 (decimal units).
_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_DURATION = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?$", re.IGNORECASE
)


def size_in_bytes(text: str, flag: str) -> int:
    """``20gb`` -> 20000000000; bytes without a unit."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise CtlError(
            f"{flag}: got {text!r}; accepted: a number of bytes with an optional unit "
            f"{'/'.join(u for u in _SIZE_UNITS if u)} (decimal), e.g. 20gb or 500mb",
            EX_USAGE,
        )
    return int(match.group(1)) * _SIZE_UNITS[unit]


def max_age(text: str) -> str:
    """An ISO 8601 duration (days, hours, minutes, seconds) as the queue argument RabbitMQ
    writes: ``PT10M30S`` -> ``630s``."""
    match = _DURATION.match(text.strip())
    if match is None or not any(match.groupdict().values()):
        raise CtlError(
            f"--max-age: got {text!r}; accepted: an ISO 8601 duration such as PT10M30S or "
            "P5DT8H (days, hours, minutes, seconds)",
            EX_USAGE,
        )
    d, h, m, s = (int(match.group(g) or 0) for g in "dhms")
    return f"{((d * 24 + h) * 60 + m) * 60 + s}s"


def _queue_arguments(opts: argparse.Namespace) -> dict[str, object]:
    arguments: dict[str, object] = {
        "x-queue-type": "stream",
        "x-queue-leader-locator": opts.leader_locator,
    }
    if opts.max_length_bytes is not None:
        arguments["x-max-length-bytes"] = size_in_bytes(opts.max_length_bytes, "--max-length-bytes")
    if opts.max_age is not None:
        arguments["x-max-age"] = max_age(opts.max_age)
    if opts.stream_max_segment_size_bytes is not None:
        arguments["x-stream-max-segment-size-bytes"] = size_in_bytes(
            opts.stream_max_segment_size_bytes, "--stream-max-segment-size-bytes"
        )
    if opts.initial_cluster_size is not None:
        arguments["x-initial-cluster-size"] = opts.initial_cluster_size
    return arguments


def _binding_keys(opts: argparse.Namespace) -> list[str]:
    if opts.partitions is not None and opts.binding_keys is not None:
        raise CtlError("Specify --partitions or --binding-keys, not both.", EX_USAGE)
    if opts.binding_keys is not None:
        keys = [k.strip() for k in opts.binding_keys.split(",")]
        if not all(keys) or len(set(keys)) != len(keys):
            raise CtlError(
                f"--binding-keys: got {opts.binding_keys!r}; accepted: distinct, non-empty, "
                "comma-separated keys",
                EX_USAGE,
            )
        return keys
    count = 3 if opts.partitions is None else opts.partitions
    if count < 1:
        raise CtlError(f"--partitions: got {count}; accepted: 1 or more", EX_USAGE)
    return [str(i) for i in range(count)]


def add_super_stream(api: Api, opts: argparse.Namespace) -> int:
    keys = _binding_keys(opts)
    arguments = _queue_arguments(opts)
    vhost, name = q(opts.vhost), opts.name
    _say(opts, "Adding a super stream...")
    existing = {e["name"] for e in api.call("GET", f"/exchanges/{vhost}")}
    if name in existing:
        raise CtlError(f"there is already an exchange named {name}")
    api.call(
        "PUT",
        f"/exchanges/{vhost}/{q(name)}",
        {
            "type": "direct",
            "durable": True,
            "auto_delete": False,
            "internal": False,
            "arguments": {SUPER_STREAM_ARGUMENT: True},
        },
    )
    for order, key in enumerate(keys):
        stream = f"{name}-{key}"  # as RabbitMQ names partitions, of both forms
        api.call(
            "PUT",
            f"/queues/{vhost}/{q(stream)}",
            {"durable": True, "auto_delete": False, "arguments": arguments},
        )
        api.call(
            "POST",
            f"/bindings/{vhost}/e/{q(name)}/q/{q(stream)}",
            {"routing_key": key, "arguments": {PARTITION_ORDER_ARGUMENT: order}},
        )
    print(f"Super stream {name} has been created")
    return 0


def delete_super_stream(api: Api, opts: argparse.Namespace) -> int:
    vhost, name = q(opts.vhost), opts.name
    _say(opts, "Deleting a super stream...")
    bindings = api.call("GET", f"/exchanges/{vhost}/{q(name)}/bindings/source")
    for binding in bindings:
        if binding["destination_type"] == "queue" and PARTITION_ORDER_ARGUMENT in (
            binding.get("arguments") or {}
        ):
            api.call("DELETE", f"/queues/{vhost}/{q(binding['destination'])}")
    api.call("DELETE", f"/exchanges/{vhost}/{q(name)}")
    print(f"Super stream {name} has been deleted")
    return 0


def _say(opts: argparse.Namespace, line: str) -> None:
    if not opts.quiet:
        print(line)


VERBS: dict[str, Callable[[Api, argparse.Namespace], int]] = {
    "add_super_stream": add_super_stream,
    "delete_super_stream": delete_super_stream,
}


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="amqp-broker streams",
        description="rabbitmq-streams' super stream commands over the management API.",
    )
    p.add_argument("--url", default=DEFAULT_URL, help=f"management URL (default {DEFAULT_URL})")
    p.add_argument("-u", "--username", default="guest")
    p.add_argument("--password", default="guest")
    p.add_argument("-q", "--quiet", action="store_true", help="no informational lines")
    p.add_argument("-t", "--timeout", type=float, default=60.0, help="seconds per request")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    add = verbs.add_parser("add_super_stream", help="add a super stream")
    delete = verbs.add_parser("delete_super_stream", help="delete a super stream")
    for verb in (add, delete):
        verb.add_argument("name", help="the name of the super stream")
        verb.add_argument("-p", "--vhost", default="/", help="virtual host (default /)")
    add.add_argument("--partitions", type=int, help="the number of partitions (default 3)")
    add.add_argument(
        "--binding-keys",
        "--routing-keys",
        dest="binding_keys",
        help="comma-separated binding keys (instead of --partitions)",
    )
    add.add_argument("--max-length-bytes", help="largest size of each partition, e.g. 20gb")
    add.add_argument("--max-age", help="ISO 8601 duration segments are kept, e.g. PT10M30S")
    add.add_argument("--stream-max-segment-size-bytes", help="segment size, e.g. 500mb")
    add.add_argument("--leader-locator", choices=("client-local", "balanced"), default="balanced")
    add.add_argument("--initial-cluster-size", type=int)
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    return run_verb(parse, VERBS, argv)
