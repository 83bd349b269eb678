"""``/api/bindings`` in all of RabbitMQ's forms: every binding, a vhost's, those between an
exchange and a queue (``e/{source}/q/{queue}``) or two exchanges (``e/{source}/e/{dest}``),
and one binding by its ``properties_key``; plus the bindings of one exchange or queue."""

from __future__ import annotations

import base64
import hashlib
from typing import Any, cast
from urllib.parse import quote, unquote

from aiohttp import web

from ..model.exchanges import Exchange, arguments_key
from ..model.queues import Queue
from ..model.vhost import VirtualHost
from .auth import access_in, authorize, vhost_for, vhosts_in_scope
from .listing import list_response, sliced
from .responses import json_response, no_content, not_found, read_json, table, text

Binding = tuple[Exchange, Queue | Exchange, str, dict[str, Any]]


def properties_key(key: str, arguments: dict[str, Any]) -> str:
    """A binding's name in paths, as RabbitMQ makes it: the quoted routing key ("~" for
    an empty one), and ``~`` and a digest of the arguments when there are some."""
    quoted = quote(key, safe="").replace("~", "%7E")
    if not arguments:
        return quoted or "~"
    digest = hashlib.sha1(arguments_key(arguments).encode()).digest()[:6]
    return f"{quoted}~{base64.urlsafe_b64encode(digest).decode()}"


def bindings_in(vhost: VirtualHost) -> list[Binding]:
    return [
        (ex, cast("Queue | Exchange", dest), key, args)
        for ex in vhost.exchanges.values()
        for (dest, key, _), args in ex.bindings.items()
    ]


def binding_info(vhost: VirtualHost, b: Binding) -> dict[str, Any]:
    source, dest, key, args = b
    return {
        "source": source.name,
        "vhost": vhost.name,
        "destination": dest.name,
        "destination_type": "queue" if isinstance(dest, Queue) else "exchange",
        "routing_key": key,
        "arguments": args,
        "properties_key": properties_key(key, args),
    }


def _source(request: web.Request, vhost: VirtualHost) -> Exchange:
    name = request.match_info["source"]
    ex = vhost.exchanges.get("" if name == "amq.default" else name)
    if ex is None:
        not_found()
    return ex


def _destination(request: web.Request, vhost: VirtualHost) -> Queue | Exchange:
    name = request.match_info["destination"]
    found: Queue | Exchange | None = (
        vhost.queues.get(name) if request.match_info["kind"] == "q" else vhost.exchanges.get(name)
    )
    if found is None:
        not_found()
    return found


def _between(request: web.Request, vhost: VirtualHost) -> list[Binding]:
    source, dest = _source(request, vhost), _destination(request, vhost)
    return [b for b in bindings_in(vhost) if b[0] is source and b[1] is dest]


async def list_bindings(request: web.Request) -> web.StreamResponse:
    vhosts = vhosts_in_scope(request)
    pairs = [(v, b) for v in vhosts for b in bindings_in(v)]
    return await list_response(request, await sliced(lambda vb: binding_info(*vb), pairs))


async def list_between(request: web.Request) -> web.StreamResponse:
    vhost = vhost_for(request)
    return await list_response(request, [binding_info(vhost, b) for b in _between(request, vhost)])


def _authorize(request: web.Request, vhost: VirtualHost, b: Binding) -> None:
    source, dest, key, _ = b
    access = access_in(request, vhost)
    if isinstance(dest, Queue):
        authorize(access, "queue.bind", queue=dest.name, exchange=source.name, routing_key=key)
    else:
        authorize(
            access, "exchange.bind", destination=dest.name, source=source.name, routing_key=key
        )


async def create_binding(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    source, dest = _source(request, vhost), _destination(request, vhost)
    body = await read_json(request)
    key, args = text(body, "routing_key", ""), table(body, "arguments")
    _authorize(request, vhost, (source, dest, key, args))
    vhost.bind(dest, source.name, key, args)
    return web.Response(status=201, headers={"Location": properties_key(key, args)})


def _binding(request: web.Request, vhost: VirtualHost) -> Binding:
    wanted = request.match_info["props"]
    for b in _between(request, vhost):
        pk = properties_key(b[2], b[3])
        if wanted in (pk, unquote(pk)):
            return b
    not_found()


async def get_binding(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    return json_response(binding_info(vhost, _binding(request, vhost)))


async def delete_binding(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    b = _binding(request, vhost)
    _authorize(request, vhost, b)
    vhost.unbind(b[1], b[0].name, b[2], b[3])
    return no_content()


async def exchange_bindings(request: web.Request) -> web.StreamResponse:
    """``/api/exchanges/{vhost}/{name}/bindings/source`` and ``.../destination``."""
    vhost = vhost_for(request)
    name = request.match_info["name"]
    ex = vhost.exchanges.get("" if name == "amq.default" else name)
    if ex is None:
        not_found()
    side = 0 if request.match_info["side"] == "source" else 1
    found = [b for b in bindings_in(vhost) if b[side] is ex]
    return await list_response(request, await sliced(lambda b: binding_info(vhost, b), found))


async def queue_bindings(request: web.Request) -> web.StreamResponse:
    vhost = vhost_for(request)
    q = vhost.queues.get(request.match_info["name"])
    if q is None:
        not_found()
    found = [b for b in bindings_in(vhost) if b[1] is q]
    return await list_response(request, [binding_info(vhost, b) for b in found])


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/bindings", list_bindings)
    router.add_get("/api/bindings/{vhost}", list_bindings)
    between = "/api/bindings/{vhost}/e/{source}/{kind:[qe]}/{destination}"
    router.add_get(between, list_between)
    router.add_post(between, create_binding)
    router.add_get(between + "/{props}", get_binding)
    router.add_delete(between + "/{props}", delete_binding)
    router.add_get(
        "/api/exchanges/{vhost}/{name}/bindings/{side:source|destination}", exchange_bindings
    )
    router.add_get("/api/queues/{vhost}/{name}/bindings", queue_bindings)
