"""rabbitmqctl's policy and vhost-limit verbs for ``amqp-broker ctl`` (ctl.py holds the
rest): ``set_policy``, ``clear_policy``, ``list_policies``, their ``operator_policy``
variants, and ``set_vhost_limits``, ``clear_vhost_limits``, ``list_vhost_limits``, with
rabbitmqctl 4.0's arguments (``--priority``, ``--apply-to``, ``-p``) and its listings
(the definition as compact JSON), over the management API."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from .ctl_api import EX_USAGE, Api, CtlError, arity, q

#: The columns of a policy listing, in rabbitmqctl's order.
POLICY_COLUMNS = ("vhost", "name", "pattern", "apply-to", "definition", "priority")


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``set_policy`` and ``set_operator_policy``."""
    parser.add_argument("--priority", type=int, default=0, help="set_policy: its priority")
    parser.add_argument(
        "--apply-to", default="all", help="set_policy: queues, exchanges, ... (default all)"
    )


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _info(opts: argparse.Namespace, line: str) -> None:
    if not (opts.quiet or opts.silent):
        print(line)


def _json_argument(opts: argparse.Namespace, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise CtlError(f"{opts.verb}: {text!r} is not JSON: {e}", EX_USAGE) from None


def _kind(opts: argparse.Namespace) -> tuple[str, str]:
    """(API collection, what rabbitmqctl calls it) of the verb."""
    if "operator" in opts.verb:
        return "operator-policies", "operator policy override"
    return "policies", "policy"


def set_policy(api: Api, opts: argparse.Namespace) -> int:

    name, pattern, definition = arity(opts, "name", "pattern", "definition")
    collection, what = _kind(opts)
    _info(
        opts,
        f'Setting {what} "{name}" for pattern "{pattern}" to "{definition}" with priority '
        f'"{opts.priority}" for vhost "{opts.vhost}" ...',
    )
    body = {
        "pattern": pattern,
        "definition": _json_argument(opts, definition),
        "priority": opts.priority,
        "apply-to": opts.apply_to,
    }
    api.call("PUT", f"/{collection}/{q(opts.vhost)}/{q(name)}", body)
    return 0


def clear_policy(api: Api, opts: argparse.Namespace) -> int:

    (name,) = arity(opts, "name")
    collection, what = _kind(opts)
    _info(opts, f'Clearing {what} "{name}" on vhost "{opts.vhost}" ...')
    api.call("DELETE", f"/{collection}/{q(opts.vhost)}/{q(name)}")
    return 0


def list_policies(api: Api, opts: argparse.Namespace) -> int:

    arity(opts)
    collection, what = _kind(opts)
    items = api.call("GET", f"/{collection}/{q(opts.vhost)}")
    if opts.formatter == "json":
        print(json.dumps([{c: i[c] for c in POLICY_COLUMNS} for i in items]))
        return 0
    title = "policies" if what == "policy" else "operator policy overrides"
    _info(opts, f'Listing {title} for vhost "{opts.vhost}" ...')
    if not opts.silent:
        print("\t".join(POLICY_COLUMNS))
    for item in items:
        cells = [_compact(item[c]) if c == "definition" else str(item[c]) for c in POLICY_COLUMNS]
        print("\t".join(cells))
    return 0


def set_vhost_limits(api: Api, opts: argparse.Namespace) -> int:

    (text,) = arity(opts, "definition")
    limits = _json_argument(opts, text)
    if not isinstance(limits, dict):
        raise CtlError(f"set_vhost_limits: {text!r} is not a JSON object", EX_USAGE)
    _info(opts, f'Setting vhost limits to "{text}" for vhost "{opts.vhost}" ...')
    for name, value in limits.items():
        api.call("PUT", f"/vhost-limits/{q(opts.vhost)}/{q(name)}", {"value": value})
    return 0


def _limits(api: Api, vhost: str) -> dict[str, Any]:

    found = api.call("GET", f"/vhost-limits/{q(vhost)}")
    return dict(found[0]["value"]) if found else {}


def clear_vhost_limits(api: Api, opts: argparse.Namespace) -> int:

    arity(opts)
    _info(opts, f'Clearing vhost "{opts.vhost}" limits ...')
    for name in _limits(api, opts.vhost):
        api.call("DELETE", f"/vhost-limits/{q(opts.vhost)}/{q(name)}")
    return 0


def list_vhost_limits(api: Api, opts: argparse.Namespace) -> int:
    arity(opts)
    limits = _limits(api, opts.vhost)
    if opts.formatter == "json":
        print(json.dumps(limits))
        return 0
    _info(opts, f'Listing limits for vhost "{opts.vhost}" ...')
    print(_compact(limits) if limits else "")
    return 0


VERBS: dict[str, Callable[[Api, argparse.Namespace], int]] = {
    "set_policy": set_policy,
    "clear_policy": clear_policy,
    "list_policies": list_policies,
    "set_operator_policy": set_policy,
    "clear_operator_policy": clear_policy,
    "list_operator_policies": list_policies,
    "set_vhost_limits": set_vhost_limits,
    "clear_vhost_limits": clear_vhost_limits,
    "list_vhost_limits": list_vhost_limits,
}
