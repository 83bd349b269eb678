"""The node and cluster resources: ``/api/overview``, ``/api/nodes``, ``/api/whoami``,
``/api/health/checks/*``, ``/api/aliveness-test``, ``/api/cluster-name``, and the empty lists
of what the broker has none of (policies, parameters, extensions)."""

from __future__ import annotations

from aiohttp import web

from ..model.exchanges import EXCHANGE_TYPES
from .auth import require_tag, user_of, vhost_for, visible_vhosts
from .connections import visible_connections
from .context import broker_of, sampler_of
from .node import alarms, fd_counts, listeners, node_info, node_name, versions
from .rates import CHANNEL_FIELDS, counts_of, overall_stats, queue_totals, with_details
from .responses import json_response, not_found

CLUSTER_NAME = "amqp-spark"


async def get_overview(request: web.Request) -> web.Response:
    broker = broker_of(request)
    rates = sampler_of(request).rates(broker)
    vhosts = visible_vhosts(request)
    conns = visible_connections(request)
    channels = [c for conn in conns for c in conn.snapshot().channels]
    totals = queue_totals(vhosts)
    body = {
        **versions(),
        "rates_mode": "basic",
        "cluster_name": CLUSTER_NAME,
        "node": node_name(),
        "disable_stats": False,
        "enable_queue_totals": True,
        "exchange_types": [
            {"name": name, "description": f"AMQP {name} exchange", "enabled": True}
            for name in EXCHANGE_TYPES
        ],
        "message_stats": with_details(counts_of(overall_stats(broker)), rates, CHANNEL_FIELDS),
        "queue_totals": with_details(totals, rates, totals),
        "object_totals": {
            "connections": len(conns),
            "channels": len(channels),
            "consumers": sum(len(c.consumers) for c in channels),
            "exchanges": sum(len(v.exchanges) for v in vhosts),
            "queues": sum(len(v.queues) for v in vhosts),
        },
        "statistics_db_event_queue": 0,
        **fd_counts(broker),  # RabbitMQ has them per node only; here the one node's
        "listeners": listeners(broker),
        "contexts": [{"node": node_name(), "description": "RabbitMQ Management", "path": "/"}],
    }
    return json_response(body)


async def get_nodes(request: web.Request) -> web.Response:
    require_tag(request, "monitoring")
    return json_response([node_info(broker_of(request))])


async def get_node(request: web.Request) -> web.Response:
    require_tag(request, "monitoring")
    if request.match_info["node"] != node_name():
        not_found()
    return json_response(node_info(broker_of(request)))


async def get_whoami(request: web.Request) -> web.Response:
    user = user_of(request)
    return json_response({"name": user.name, "tags": list(user.tags)})


async def get_cluster_name(request: web.Request) -> web.Response:
    return json_response({"name": CLUSTER_NAME})


async def empty_list(request: web.Request) -> web.Response:
    return json_response([])


def _health(failed_reason: str | None, **extra: object) -> web.Response:
    if failed_reason is None:
        return json_response({"status": "ok", **extra})
    return json_response({"status": "failed", "reason": failed_reason, **extra}, 503)


async def check_alarms(request: web.Request) -> web.Response:
    require_tag(request, "monitoring")
    found = alarms(broker_of(request))
    if not found:
        return _health(None)
    return _health("resource alarm(s) in effect in the cluster", alarms=found)


async def check_ok(request: web.Request) -> web.Response:
    """Checks that cannot fail on a single node without mirrors or quorum peers."""
    require_tag(request, "monitoring")
    return _health(None)


async def check_port_listener(request: web.Request) -> web.Response:
    require_tag(request, "monitoring")
    wanted = request.match_info["port"]
    ports = [str(listener["port"]) for listener in listeners(broker_of(request))]
    if wanted in ports:
        return _health(None, port=int(wanted))
    return _health(f"No active listener on port {wanted}", missing=wanted, ports=ports)


async def check_protocol_listener(request: web.Request) -> web.Response:
    require_tag(request, "monitoring")
    wanted = request.match_info["protocol"]
    protocols = [str(listener["protocol"]) for listener in listeners(broker_of(request))]
    aliases = {"amqp091": "amqp", "amqp0-9-1": "amqp", "https": "http"}
    if aliases.get(wanted, wanted) in protocols:
        return _health(None, protocol=wanted)
    return _health(f"No active listener for protocol {wanted}", missing=wanted, protocols=protocols)


async def aliveness_test(request: web.Request) -> web.Response:
    vhost_for(request)
    return json_response({"status": "ok"})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/overview", get_overview)
    router.add_get("/api/nodes", get_nodes)
    router.add_get("/api/nodes/{node}", get_node)
    router.add_get("/api/whoami", get_whoami)
    router.add_get("/api/cluster-name", get_cluster_name)
    for path in (
        "/api/extensions",
        "/api/parameters",
        "/api/global-parameters",
        "/api/feature-flags",
    ):
        router.add_get(path, empty_list)
    router.add_get("/api/health/checks/alarms", check_alarms)
    router.add_get("/api/health/checks/local-alarms", check_alarms)
    for name in ("virtual-hosts", "node-is-quorum-critical", "node-is-mirror-sync-critical"):
        router.add_get(f"/api/health/checks/{name}", check_ok)
    router.add_get("/api/health/checks/port-listener/{port}", check_port_listener)
    router.add_get("/api/health/checks/protocol-listener/{protocol}", check_protocol_listener)
    router.add_get("/api/aliveness-test/{vhost}", aliveness_test)
