"""``/api/exchanges``: list, show, declare (PUT), delete and publish to exchanges. The
default exchange is named ``amq.default`` in paths, as in RabbitMQ."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..model.exchanges import Exchange
from ..model.vhost import VirtualHost
from .auth import access_in, authorize, vhost_for, vhosts_in_scope
from .context import broker_of, sampler_of
from .listing import list_response, sliced
from .messages import publish
from .rates import EXCHANGE_FIELDS, message_stats
from .responses import (
    created,
    flag,
    found,
    json_response,
    no_content,
    query_flag,
    read_json,
    table,
    text,
)

DEFAULT_EXCHANGE = "amq.default"


def exchange_info(request: web.Request, vhost: VirtualHost, ex: Exchange) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": ex.name,
        "vhost": vhost.name,
        "type": ex.type_name,
        "durable": ex.durable,
        "auto_delete": ex.auto_delete,
        "internal": ex.internal,
        "arguments": ex.arguments,
    }
    if ex.policy is not None:  # RabbitMQ 4.0 shows none when there is none
        info["policy"] = ex.policy.name
    stats = message_stats(ex.stats, sampler_of(request).rates(ex), EXCHANGE_FIELDS)
    if stats is not None:
        info["message_stats"] = stats
    return info


def exchange_name(request: web.Request) -> str:
    name = request.match_info["name"]
    return "" if name == DEFAULT_EXCHANGE else name


def existing_exchange(request: web.Request, vhost: VirtualHost) -> Exchange:
    return found(vhost.exchanges, exchange_name(request))


async def list_exchanges(request: web.Request) -> web.StreamResponse:
    vhosts = vhosts_in_scope(request)
    pairs = [(v, ex) for v in vhosts for ex in v.exchanges.values()]
    return await list_response(request, await sliced(lambda vx: exchange_info(request, *vx), pairs))


async def get_exchange(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    return json_response(exchange_info(request, vhost, existing_exchange(request, vhost)))


async def put_exchange(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    body = await read_json(request)
    name = exchange_name(request)
    type_name = text(body, "type", "direct")
    durable, auto_delete = flag(body, "durable"), flag(body, "auto_delete")
    internal, arguments = flag(body, "internal"), table(body, "arguments")
    authorize(
        access_in(request, vhost),
        "exchange.declare",
        exchange=name,
        passive=False,
        arguments=arguments,
    )
    existed = name in vhost.exchanges
    vhost.declare_exchange(
        name,
        type_name,
        durable=durable,
        auto_delete=auto_delete,
        internal=internal,
        arguments=arguments,
    )
    return created(existed)


async def delete_exchange(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    ex = existing_exchange(request, vhost)
    authorize(access_in(request, vhost), "exchange.delete", exchange=ex.name)
    vhost.delete_exchange(ex.name, if_unused=query_flag(request, "if-unused"))
    return no_content()


async def publish_message(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    ex = existing_exchange(request, vhost)
    body = await read_json(request)
    routing_key = text(body, "routing_key")
    authorize(access_in(request, vhost), "basic.publish", exchange=ex.name, routing_key=routing_key)
    return json_response({"routed": publish(broker_of(request), vhost, ex, body)})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/exchanges", list_exchanges)
    router.add_get("/api/exchanges/{vhost}", list_exchanges)
    router.add_get("/api/exchanges/{vhost}/{name}", get_exchange)
    router.add_put("/api/exchanges/{vhost}/{name}", put_exchange)
    router.add_delete("/api/exchanges/{vhost}/{name}", delete_exchange)
    router.add_post("/api/exchanges/{vhost}/{name}/publish", publish_message)
