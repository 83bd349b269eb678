"""``/api/vhosts``: list, show, create (PUT) and delete virtual hosts. A vhost created here
gives its creator full permissions in it, as RabbitMQ's API does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..config import Permission
from ..model.vhost import VirtualHost
from .access_store import save_access
from .auth import require_tag, vhost_for, visible_vhosts
from .context import broker_of, sampler_of
from .listing import list_response
from .node import node_name
from .policy_store import save_policies
from .rates import queue_totals, with_details
from .responses import bad_request, created, json_response, no_content, read_json

if TYPE_CHECKING:
    from .managed import ManagedBroker

#: connection.close's reply to the connections of a vhost deleted here.
VHOST_DELETED = "CONNECTION_FORCED - vhost '{}' is deleted"


def vhost_info(request: web.Request, vhost: VirtualHost) -> dict[str, Any]:
    totals = queue_totals([vhost])
    return {
        "name": vhost.name,
        "description": "",
        "tags": [],
        "metadata": {"description": "", "tags": []},
        "default_queue_type": "classic",
        "tracing": False,
        "cluster_state": {node_name(): "running"},
        **with_details(totals, sampler_of(request).rates(vhost), totals),
    }


def add_vhost(broker: ManagedBroker, name: str) -> bool:
    """Create ``name`` unless it exists; True if it existed."""
    if name in broker.vhosts:
        return True
    if not name:
        bad_request("a vhost needs a name")
    broker.vhosts[name] = VirtualHost(
        name, broker.loop, broker.memory, broker.store, broker.queue_types
    )
    broker.config.vhosts.append(name)
    return False


def delete_vhost(broker: ManagedBroker, vhost: VirtualHost) -> None:
    """Close its connections, delete its queues and exchanges, forget its permissions."""
    for conn in list(broker.connections):
        if conn.vhost is vhost:
            conn.close(320, VHOST_DELETED.format(vhost.name))
    for queue in list(vhost.queues.values()):
        vhost.delete_queue(queue)
    for name in [n for n in vhost.exchanges if n and not n.startswith("amq.")]:
        vhost.delete_exchange(name)
    del broker.vhosts[vhost.name]
    broker.config.vhosts.remove(vhost.name)
    for user in broker.config.users.values():
        user.permissions.pop(vhost.name, None)
    topics = broker.config.topic_permissions
    for key in [k for k in topics if k[1] == vhost.name]:
        del topics[key]


async def list_vhosts(request: web.Request) -> web.StreamResponse:
    return await list_response(request, [vhost_info(request, v) for v in visible_vhosts(request)])


async def get_vhost(request: web.Request) -> web.Response:
    return json_response(vhost_info(request, vhost_for(request)))


async def put_vhost(request: web.Request) -> web.Response:
    user = require_tag(request, "administrator")
    await read_json(request)  # description, tags, tracing: accepted, not kept
    broker = broker_of(request)
    name = request.match_info["vhost"]
    existed = add_vhost(broker, name)
    if not existed:
        user.permissions.setdefault(name, Permission())
        save_access(broker)
    return created(existed)


async def delete_vhost_handler(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    vhost = vhost_for(request)
    broker = broker_of(request)
    delete_vhost(broker, vhost)
    save_access(broker)
    save_policies(broker)
    return no_content()


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/vhosts", list_vhosts)
    router.add_get("/api/vhosts/{vhost}", get_vhost)
    router.add_put("/api/vhosts/{vhost}", put_vhost)
    router.add_delete("/api/vhosts/{vhost}", delete_vhost_handler)
