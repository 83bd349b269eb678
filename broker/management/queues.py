"""``/api/queues``: list, show, declare (PUT), delete, purge (``contents``) and get from
queues, with their depths, consumers and message rates."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from amqp_protocol import SPEC_0_9_1

from ..model.policies import merge_definitions
from ..model.queues import Queue
from ..model.vhost import VirtualHost
from .auth import access_in, authorize, vhost_for, vhosts_in_scope
from .connections import connection_name, consumers_of
from .context import broker_of, sampler_of
from .listing import list_response, sliced
from .messages import get
from .node import node_name
from .rates import QUEUE_FIELDS, depths, message_stats
from .responses import (
    created,
    flag,
    found,
    json_response,
    no_content,
    query_flag,
    read_json,
    table,
)


class ManagementClient:
    """The declaring "connection" of what the API declares: it speaks 0-9-1 (so that the
    model applies 0-9-1's rules) and owns nothing (the API declares no exclusive queue)."""

    spec = SPEC_0_9_1


MANAGEMENT_CLIENT = ManagementClient()


def policy_fields(q: Queue) -> dict[str, Any]:
    """The policy and operator policy applied to ``q``, and what they make together."""
    policy, operator = q.policy, q.operator_policy
    return {
        "policy": None if policy is None else policy.name,
        "operator_policy": None if operator is None else operator.name,
        "effective_policy_definition": merge_definitions(policy, operator),
    }


def queue_info(request: web.Request, vhost: VirtualHost, q: Queue) -> dict[str, Any]:
    rates = sampler_of(request).rates(q)
    counts = depths(q)
    info: dict[str, Any] = {
        "name": q.name,
        "vhost": vhost.name,
        "type": q.type_name,
        "node": node_name(),
        "state": "running",
        "durable": q.durable,
        "auto_delete": q.auto_delete,
        "exclusive": q.exclusive,
        "arguments": q.arguments,
        "consumers": q.consumer_count,
        **policy_fields(q),
        "exclusive_consumer_tag": None,
        "message_bytes_ready": q.ready_bytes,
        **counts,
        **{f"{name}_details": {"rate": rates.get(name, 0.0)} for name in counts},
    }
    owner = q.owner
    if owner is not None and hasattr(owner, "transport"):
        info["owner_pid_details"] = {"name": connection_name(owner)}  # type: ignore[arg-type]
    stats = message_stats(q.stats, rates, QUEUE_FIELDS)
    if stats is not None:
        info["message_stats"] = stats
    return info


def existing_queue(request: web.Request, vhost: VirtualHost) -> Queue:
    return found(vhost.queues, request.match_info["name"])


async def list_queues(request: web.Request) -> web.StreamResponse:
    vhosts = vhosts_in_scope(request)
    pairs = [(v, q) for v in vhosts for q in v.queues.values()]
    return await list_response(request, await sliced(lambda vq: queue_info(request, *vq), pairs))


async def get_queue(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    q = existing_queue(request, vhost)
    info = queue_info(request, vhost, q)
    consumers = consumers_of(request, vhost.name)
    info["consumer_details"] = [c for c in consumers if c["queue"]["name"] == q.name]
    return json_response(info)


async def put_queue(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    name = request.match_info["name"]
    body = await read_json(request)
    durable, auto_delete = flag(body, "durable"), flag(body, "auto_delete")
    arguments = table(body, "arguments")
    authorize(
        access_in(request, vhost), "queue.declare", queue=name, passive=False, arguments=arguments
    )
    existed = name in vhost.queues
    vhost.declare_queue(
        name,
        owner=MANAGEMENT_CLIENT,
        durable=durable,
        auto_delete=auto_delete,
        arguments=arguments,
    )
    return created(existed)


async def delete_queue(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    q = existing_queue(request, vhost)
    authorize(access_in(request, vhost), "queue.delete", queue=q.name)
    vhost.delete_queue_named(
        q.name,
        q.owner,
        if_unused=query_flag(request, "if-unused"),
        if_empty=query_flag(request, "if-empty"),
    )
    return no_content()


async def purge_queue(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    q = existing_queue(request, vhost)
    authorize(access_in(request, vhost), "queue.purge", queue=q.name)
    q.purge()
    return no_content()


async def get_messages(request: web.Request) -> web.Response:
    vhost = vhost_for(request)
    q = existing_queue(request, vhost)
    body = await read_json(request)
    authorize(access_in(request, vhost), "basic.get", queue=q.name)
    vhost.queue(q.name, owner=None)  # an exclusive queue is its connection's: 400 locked
    return json_response(get(broker_of(request), q, body))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/queues", list_queues)
    router.add_get("/api/queues/{vhost}", list_queues)
    router.add_get("/api/queues/{vhost}/{name}", get_queue)
    router.add_put("/api/queues/{vhost}/{name}", put_queue)
    router.add_delete("/api/queues/{vhost}/{name}", delete_queue)
    router.add_delete("/api/queues/{vhost}/{name}/contents", purge_queue)
    router.add_post("/api/queues/{vhost}/{name}/get", get_messages)
