"""``amqp-broker ctl VERB ...``: rabbitmqctl's verbs and flags, over the management HTTP API
(so it works wherever the API is reachable, with its users and tags).

Listings print tab-separated columns, as rabbitmqctl does: an informational line first
(left out with ``-q``), a header row (left out with ``-s``), one row per object. Column names
are rabbitmqctl's (``list_queues name messages consumers``); ``--formatter json`` prints
JSON instead. Exit status: 0 done, 64 bad usage, 69 broker unreachable, 70 refused by it.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from . import ctl_policies
from .ctl_api import EX_USAGE, Api, CtlError, q
from .ctl_api import arity as _arity

DEFAULT_URL = "http://127.0.0.1:15672/"


#: rabbitmqctl column name -> the API field (dotted) it shows, where they differ
COLUMN_FIELDS = {
    "source_name": "source",
    "destination_name": "destination",
    "destination_kind": "destination_type",
    "queue_name": "queue.name",
    "channel_pid": "channel_details.name",
    "connection_name": "name",
}
#: verb -> (API path under the vhost or not, default columns, what the listing says)
LISTINGS = {
    "list_queues": ("/queues/{vhost}", ["name", "messages"], "queues for vhost {vhost}"),
    "list_exchanges": ("/exchanges/{vhost}", ["name", "type"], "exchanges for vhost {vhost}"),
    "list_bindings": (
        "/bindings/{vhost}",
        [
            "source_name",
            "source_kind",
            "destination_name",
            "destination_kind",
            "routing_key",
            "arguments",
        ],
        "bindings for vhost {vhost}",
    ),
    "list_connections": (
        "/connections",
        ["user", "peer_host", "peer_port", "state"],
        "connections",
    ),
    "list_channels": (
        "/channels",
        ["name", "consumer_count", "messages_unacknowledged"],
        "channels",
    ),
    "list_consumers": (
        "/consumers/{vhost}",
        ["queue_name", "channel_pid", "consumer_tag", "ack_required", "prefetch_count", "active"],
        "consumers in vhost {vhost}",
    ),
    "list_permissions": (
        "/vhosts/{vhost}/permissions",
        ["user", "configure", "write", "read"],
        "permissions for vhost {vhost}",
    ),
    "list_topic_permissions": (
        "/vhosts/{vhost}/topic-permissions",
        ["user", "exchange", "write", "read"],
        "topic permissions for vhost {vhost}",
    ),
    "list_users": ("/users", ["user", "tags"], "users"),
    "list_vhosts": ("/vhosts", ["name"], "vhosts"),
}


def _field(item: dict[str, Any], column: str) -> Any:
    if column == "source_kind":
        return "exchange"
    if column == "user" and "user" not in item:
        column = "name"
    value: Any = item
    for part in COLUMN_FIELDS.get(column, column).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def listing(api: Api, opts: argparse.Namespace) -> int:
    path, default_columns, what = LISTINGS[opts.verb]
    columns = opts.args or default_columns
    items = api.call("GET", path.format(vhost=q(opts.vhost)))
    rows = [{c: _field(i, c) for c in columns} for i in items]
    if opts.formatter == "json":
        print(json.dumps(rows))
        return 0
    if not (opts.quiet or opts.silent):
        print(f"Listing {what.format(vhost=opts.vhost)} ...")
    if not opts.silent:
        print("\t".join(columns))
    for row in rows:
        print("\t".join(_cell(row[c]) for c in columns))
    return 0


def add_user(api: Api, opts: argparse.Namespace) -> int:
    name, password = _arity(opts, "username", "password")
    api.call("PUT", f"/users/{q(name)}", {"password": password, "tags": ""})
    return 0


def delete_user(api: Api, opts: argparse.Namespace) -> int:
    (name,) = _arity(opts, "username")
    api.call("DELETE", f"/users/{q(name)}")
    return 0


def change_password(api: Api, opts: argparse.Namespace) -> int:
    name, password = _arity(opts, "username", "new_password")
    user = api.call("GET", f"/users/{q(name)}")
    api.call("PUT", f"/users/{q(name)}", {"password": password, "tags": user["tags"]})
    return 0


def set_user_tags(api: Api, opts: argparse.Namespace) -> int:
    if not opts.args:
        raise CtlError("set_user_tags takes <username> [<tag> ...]", EX_USAGE)
    name, *tags = opts.args
    api.call("PUT", f"/users/{q(name)}", {"tags": tags})
    return 0


def set_permissions(api: Api, opts: argparse.Namespace) -> int:
    user, configure, write, read = _arity(opts, "username", "conf", "write", "read")
    body = {"configure": configure, "write": write, "read": read}
    api.call("PUT", f"/permissions/{q(opts.vhost)}/{q(user)}", body)
    return 0


def clear_permissions(api: Api, opts: argparse.Namespace) -> int:
    (user,) = _arity(opts, "username")
    api.call("DELETE", f"/permissions/{q(opts.vhost)}/{q(user)}")
    return 0


def set_topic_permissions(api: Api, opts: argparse.Namespace) -> int:
    user, exchange, write, read = _arity(opts, "username", "exchange", "write", "read")
    body = {"exchange": exchange, "write": write, "read": read}
    api.call("PUT", f"/topic-permissions/{q(opts.vhost)}/{q(user)}", body)
    return 0


def add_vhost(api: Api, opts: argparse.Namespace) -> int:
    (name,) = _arity(opts, "vhost")
    api.call("PUT", f"/vhosts/{q(name)}", {})
    return 0


def delete_vhost(api: Api, opts: argparse.Namespace) -> int:
    (name,) = _arity(opts, "vhost")
    api.call("DELETE", f"/vhosts/{q(name)}")
    return 0


def export_definitions(api: Api, opts: argparse.Namespace) -> int:
    (path,) = _arity(opts, "path")
    text = json.dumps(api.call("GET", "/definitions"), indent=2)
    if path == "-":
        print(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return 0


def import_definitions(api: Api, opts: argparse.Namespace) -> int:
    (path,) = _arity(opts, "path")
    try:
        with sys.stdin if path == "-" else open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise CtlError(f"cannot read definitions from {path}: {e}", EX_USAGE) from None
    api.call("POST", "/definitions", doc)
    return 0


def close_connection(api: Api, opts: argparse.Namespace) -> int:
    if not opts.args:
        raise CtlError("close_connection takes <connection name> [<explanation>]", EX_USAGE)
    name, explanation = opts.args[0], " ".join(opts.args[1:])
    request = urllib.request.Request(
        f"{api.base}/connections/{q(name)}",
        method="DELETE",
        headers={**api.headers, **({"X-Reason": explanation} if explanation else {})},
    )
    try:
        urllib.request.urlopen(request, timeout=api.timeout).close()
    except urllib.error.HTTPError as e:
        raise CtlError(f"cannot close connection {name!r}: {e.code} {e.reason}") from None
    return 0


def purge_queue(api: Api, opts: argparse.Namespace) -> int:
    (name,) = _arity(opts, "queue")
    api.call("DELETE", f"/queues/{q(opts.vhost)}/{q(name)}/contents")
    return 0


def status(api: Api, opts: argparse.Namespace) -> int:
    overview = api.call("GET", "/overview")
    if opts.formatter == "json":
        print(json.dumps(overview))
        return 0
    totals, objects = overview["queue_totals"], overview["object_totals"]
    print(f"Status of node {overview['node']} ...")
    print(f"Product: {overview['product_name']} {overview['product_version']}")
    print(f"RabbitMQ version (followed): {overview['rabbitmq_version']}")
    print("Listeners:")
    for listener in overview["listeners"]:
        print(f"  {listener['protocol']}: {listener['ip_address']}:{listener['port']}")
    print(
        "Totals: "
        + ", ".join(f"{k} {v}" for k, v in objects.items())
        + f"; messages {totals['messages']} (ready {totals['messages_ready']}, "
        f"unacked {totals['messages_unacknowledged']})"
    )
    return 0


VERBS: dict[str, Callable[[Api, argparse.Namespace], int]] = {
    **dict.fromkeys(LISTINGS, listing),
    "add_user": add_user,
    "delete_user": delete_user,
    "change_password": change_password,
    "set_user_tags": set_user_tags,
    "set_permissions": set_permissions,
    "clear_permissions": clear_permissions,
    "set_topic_permissions": set_topic_permissions,
    "add_vhost": add_vhost,
    "delete_vhost": delete_vhost,
    "export_definitions": export_definitions,
    "import_definitions": import_definitions,
    "close_connection": close_connection,
    "purge_queue": purge_queue,
    "status": status,
    **ctl_policies.VERBS,
}


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="amqp-broker ctl", description="rabbitmqctl's verbs over the management API."
    )
    p.add_argument("--url", default=DEFAULT_URL, help=f"management URL (default {DEFAULT_URL})")
    p.add_argument("-u", "--username", default="guest")
    p.add_argument("--password", default="guest")
    p.add_argument("-p", "--vhost", default="/", help="virtual host (default /)")
    p.add_argument("-q", "--quiet", action="store_true", help="no informational lines")
    p.add_argument("-s", "--silent", action="store_true", help="no header row either")
    p.add_argument("--formatter", choices=("table", "json"), default="table")
    p.add_argument("-t", "--timeout", type=float, default=60.0, help="seconds per request")
    ctl_policies.add_options(p)
    p.add_argument("verb", choices=sorted(VERBS), metavar="VERB", help=", ".join(sorted(VERBS)))
    p.add_argument("args", nargs="*")
    return p.parse_intermixed_args(argv)


def main(argv: list[str]) -> int:
    return run_verb(parse, VERBS, argv)


def run_verb(
    parse: Callable[[list[str]], argparse.Namespace],
    verbs: dict[str, Callable[[Api, argparse.Namespace], int]],
    argv: list[str],
) -> int:
    """Parse ``argv`` and run its verb against the API; the exit status (also of the
    ``amqp-broker streams`` commands)."""
    try:
        opts = parse(argv)
    except SystemExit as e:
        return EX_USAGE if e.code else 0
    api = Api(opts.url, opts.username, opts.password, opts.timeout)
    try:
        return verbs[opts.verb](api, opts)
    except CtlError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.status
