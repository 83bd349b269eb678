"""``/api/definitions`` (and per vhost): export and import the broker's topology in
RabbitMQ's definitions format, so that a file exported by RabbitMQ imports here and the
reverse. Exclusive queues, the standard exchanges and the default exchange's bindings are
not exported (RabbitMQ leaves them out too). Policies are in ``policies``; operator policies
and vhost limits are ``parameters`` of the components ``operator_policy`` and
``vhost-limits``, as RabbitMQ 4.0 exports them.

An import is checked as a whole (shapes, names, vhosts) before anything is declared, so that
a malformed file changes nothing; a declaration the model refuses (an inequivalent queue,
say) stops the import there with RabbitMQ's reason."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..model.queues import Queue
from ..model.vhost import VirtualHost
from ..version import __version__
from .access_store import save_access
from .auth import require_tag, vhost_for
from .bindings import bindings_in
from .context import broker_of
from .node import PRODUCT_NAME, RABBITMQ_VERSION
from .overview import CLUSTER_NAME
from .policies import set_limit, set_policy, sorted_policies
from .policy_store import save_policies
from .queues import MANAGEMENT_CLIENT
from .responses import bad_request, dumps, flag, no_content, read_json, table, text
from .users import (
    permissions_list,
    put_user_from,
    set_permission,
    set_topic_permission,
    topic_permissions_list,
    user_info,
)
from .vhosts import add_vhost

#: The sections a definitions file may have, and the fields each item must have.
SECTIONS = {
    "users": ("name",),
    "vhosts": ("name",),
    "permissions": ("user", "vhost", "configure", "write", "read"),
    "topic_permissions": ("user", "vhost", "exchange", "write", "read"),
    "parameters": ("name", "component"),
    "global_parameters": (),
    "policies": ("name",),
    "queues": ("name",),
    "exchanges": ("name", "type"),
    "bindings": ("source", "destination", "destination_type", "routing_key"),
}
_PER_VHOST = ("queues", "exchanges", "bindings", "policies", "parameters")


def _header() -> dict[str, Any]:
    return {
        "rabbit_version": RABBITMQ_VERSION,
        "rabbitmq_version": RABBITMQ_VERSION,
        "product_name": PRODUCT_NAME,
        "product_version": __version__,
    }


def _topology(vhost: VirtualHost, with_vhost: bool) -> dict[str, list[dict[str, Any]]]:
    where = {"vhost": vhost.name} if with_vhost else {}
    queues = [q for q in vhost.queues.values() if not q.exclusive]
    exchanges = [e for e in vhost.exchanges.values() if e.name and not e.name.startswith("amq.")]
    return {
        "queues": [
            {
                "name": q.name,
                **where,
                "durable": q.durable,
                "auto_delete": q.auto_delete,
                "arguments": q.arguments,
            }
            for q in queues
        ],
        "exchanges": [
            {
                "name": e.name,
                **where,
                "type": e.type_name,
                "durable": e.durable,
                "auto_delete": e.auto_delete,
                "internal": e.internal,
                "arguments": e.arguments,
            }
            for e in exchanges
        ],
        "bindings": [
            {
                "source": src.name,
                **where,
                "destination": dest.name,
                "destination_type": "queue" if isinstance(dest, Queue) else "exchange",
                "routing_key": key,
                "arguments": args,
            }
            for src, dest, key, args in bindings_in(vhost)
            if src.name and not (isinstance(dest, Queue) and dest.exclusive)
        ],
    }


def _parameters(vhost: VirtualHost, with_vhost: bool) -> list[dict[str, Any]]:
    """Its operator policies and limits, as RabbitMQ exports them (runtime parameters)."""
    where = {"vhost": vhost.name} if with_vhost else {}
    found: list[dict[str, Any]] = [
        {
            "value": {
                "pattern": p.pattern,
                "definition": dict(p.definition),
                "priority": p.priority,
                "apply-to": p.apply_to,
            },
            **where,
            "component": "operator_policy",
            "name": p.name,
        }
        for p in sorted_policies(list(vhost.policies.operator_policies.values()))
    ]
    if vhost.limits:
        limits = {"value": dict(vhost.limits), **where}
        found.append({**limits, "component": "vhost-limits", "name": "limits"})
    return found


def _policies(vhost: VirtualHost, with_vhost: bool) -> list[dict[str, Any]]:
    return [p.as_json(with_vhost) for p in sorted_policies(list(vhost.policies.policies.values()))]


def _download(request: web.Request, body: dict[str, Any]) -> web.Response:
    headers = {}
    if request.query.get("download"):
        headers["Content-Disposition"] = f'attachment; filename="{request.query["download"]}"'
    return web.Response(text=dumps(body), content_type="application/json", headers=headers)


async def export_all(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    broker = broker_of(request)
    body: dict[str, Any] = {
        **_header(),
        "users": [user_info(u) for u in broker.config.users.values()],
        "vhosts": [
            {"name": name, "limits": [], "metadata": {"description": "", "tags": []}}
            for name in broker.vhosts
        ],
        "permissions": permissions_list(broker),
        "topic_permissions": topic_permissions_list(broker),
        "parameters": [p for v in broker.vhosts.values() for p in _parameters(v, True)],
        "global_parameters": [{"name": "cluster_name", "value": CLUSTER_NAME}],
        "policies": [p for v in broker.vhosts.values() for p in _policies(v, True)],
        "queues": [],
        "exchanges": [],
        "bindings": [],
    }
    for vhost in broker.vhosts.values():
        for section, items in _topology(vhost, with_vhost=True).items():
            body[section].extend(items)
    return _download(request, body)


async def export_vhost(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    vhost = vhost_for(request)
    body = {
        **_header(),
        "limits": dict(vhost.limits) if vhost.limits else [],
        "parameters": _parameters(vhost, False),
        "policies": _policies(vhost, False),
        **_topology(vhost, False),
    }
    return _download(request, body)


def _checked(doc: dict[str, Any], vhost: str | None, known_vhosts: set[str]) -> None:
    """400 for a malformed file or one that names a vhost that neither exists nor is in it."""
    vhosts = set(known_vhosts)
    for item in doc.get("vhosts", []) if isinstance(doc.get("vhosts"), list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            vhosts.add(item["name"])
    for section, required in SECTIONS.items():
        items = doc.get(section, [])
        if not isinstance(items, list):
            bad_request(f"definitions: {section} must be a list")
        for item in items:
            if not isinstance(item, dict):
                bad_request(f"definitions: each of {section} must be an object")
            missing = [f for f in required if f not in item]
            if missing:
                bad_request(f"definitions: an item of {section} lacks {', '.join(missing)}")
            for f in required:
                if f in ("name", "source", "destination", "user", "exchange", "type"):
                    text(item, f)
            where = vhost if vhost is not None else item.get("vhost")
            names_vhost = section in _PER_VHOST or section.endswith("permissions")
            if names_vhost and where not in vhosts:
                bad_request(f"definitions: {section} item names unknown vhost {where!r}")
            if section == "bindings" and item["destination_type"] not in ("queue", "exchange"):
                bad_request(f"definitions: destination_type {item['destination_type']!r}")
            if "arguments" in item:
                table(item, "arguments")


def _import(request: web.Request, doc: dict[str, Any], only_vhost: str | None) -> None:
    broker = broker_of(request)
    if only_vhost is None:
        for item in doc.get("vhosts", []):
            add_vhost(broker, item["name"])
        for item in doc.get("users", []):
            put_user_from(broker, item["name"], item)
        for item in doc.get("permissions", []):
            set_permission(broker, item["vhost"], item["user"], item)
        for item in doc.get("topic_permissions", []):
            set_topic_permission(broker, item["vhost"], item["user"], item)
        save_access(broker)
    for item in doc.get("policies", []):
        vhost = broker.vhosts[only_vhost or item["vhost"]]
        set_policy(vhost, item["name"], item, operator=False)
    for item in doc.get("parameters", []):
        vhost = broker.vhosts[only_vhost or item["vhost"]]
        if item.get("component") == "operator_policy":
            set_policy(vhost, item["name"], table(item, "value"), operator=True)
        elif item.get("component") == "vhost-limits":
            for name, value in table(item, "value").items():
                set_limit(vhost, name, value)
    for item in doc.get("exchanges", []):
        vhost = broker.vhosts[only_vhost or item["vhost"]]
        vhost.declare_exchange(
            item["name"],
            item["type"],
            durable=flag(item, "durable", True),
            auto_delete=flag(item, "auto_delete"),
            internal=flag(item, "internal"),
            arguments=table(item, "arguments"),
        )
    for item in doc.get("queues", []):
        vhost = broker.vhosts[only_vhost or item["vhost"]]
        vhost.declare_queue(
            item["name"],
            owner=MANAGEMENT_CLIENT,
            durable=flag(item, "durable", True),
            auto_delete=flag(item, "auto_delete"),
            arguments=table(item, "arguments"),
        )
    for item in doc.get("bindings", []):
        vhost = broker.vhosts[only_vhost or item["vhost"]]
        name = item["destination"]
        dest = vhost.queue(name) if item["destination_type"] == "queue" else vhost.exchange(name)
        vhost.bind(dest, item["source"], item["routing_key"], table(item, "arguments"))


async def import_all(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    doc = await read_json(request)
    _checked(doc, None, set(broker_of(request).vhosts))
    try:
        _import(request, doc, None)
    finally:
        save_policies(broker_of(request))  # those set before a refusal stay set
    return no_content()


async def import_vhost(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    vhost = vhost_for(request)
    doc = await read_json(request)
    _checked(doc, vhost.name, {vhost.name})
    try:
        _import(request, doc, vhost.name)
    finally:
        save_policies(broker_of(request))
    return no_content()


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/definitions", export_all)
    router.add_post("/api/definitions", import_all)
    router.add_get("/api/definitions/{vhost}", export_vhost)
    router.add_post("/api/definitions/{vhost}", import_vhost)
