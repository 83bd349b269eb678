"""``/api/connections``, ``/api/channels`` and ``/api/consumers``: the AMQP clients, listed
(management users see their own, monitoring users all) and closed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from .auth import require_tag, sees_all, user_of, vhost_for
from .context import broker_of, sampler_of
from .listing import list_response, sliced
from .node import node_name
from .rates import CHANNEL_FIELDS, connection_stats, message_stats
from .responses import json_response, no_content, not_found

if TYPE_CHECKING:
    from ..model.queues import Consumer
    from ..server.abc import Connection
    from ..server.channel import ServerChannel
    from ..server.connection import AMQPConnection
    from ..server.connection_view import ConnectionSnapshot

#: connection.close's reply to a connection closed here, RabbitMQ's.
CLOSED_HERE = "CONNECTION_FORCED - Closed via management plugin"


def connection_name(conn: Connection) -> str:
    """RabbitMQ's name of a connection: ``peer:port -> local:port``."""
    return _name(conn.snapshot())


def _name(view: ConnectionSnapshot[object]) -> str:
    return f"{view.peer[0]}:{view.peer[1]} -> {view.local[0]}:{view.local[1]}"


def visible_connections(request: web.Request) -> list[AMQPConnection]:
    """The open connections the user may see."""
    user = user_of(request)
    return [
        c
        for c in broker_of(request).connections
        if (view := c.snapshot()).open and (sees_all(user) or view.user == user.name)
    ]


def connection_info(request: web.Request, conn: AMQPConnection) -> dict[str, Any]:
    view = conn.snapshot()
    info: dict[str, Any] = {
        "name": _name(view),
        "node": node_name(),
        "type": "network",
        "state": "blocked" if view.blocked else "running",
        "user": view.user,
        "user_who_performed_action": view.user,
        "vhost": view.vhost,
        "protocol": "AMQP {}-{}-{}".format(*view.version),
        "host": view.local[0],
        "port": view.local[1],
        "peer_host": view.peer[0],
        "peer_port": view.peer[1],
        "ssl": view.ssl,
        "channels": len(view.channels),
        "channel_max": view.channel_max,
        "frame_max": view.frame_max,
        "timeout": view.heartbeat,
        "connected_at": int(view.connected_at * 1000),
        "client_properties": view.client_properties,
    }
    stats = message_stats(connection_stats(view), sampler_of(request).rates(conn), CHANNEL_FIELDS)
    if stats is not None:
        info["message_stats"] = stats
    return info


def _channel_name(channel: ServerChannel) -> str:
    return f"{connection_name(channel.conn)} ({channel.id})"


def _connection_details(conn: Connection) -> dict[str, Any]:
    view = conn.snapshot()
    return {"name": _name(view), "peer_host": view.peer[0], "peer_port": view.peer[1]}


def channel_info(request: web.Request, channel: ServerChannel) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": _channel_name(channel),
        "number": channel.id,
        "node": node_name(),
        "state": "running" if channel.flow_active else "flow",
        "user": channel.conn.snapshot().user,
        "vhost": channel.vhost.name,
        "connection_details": _connection_details(channel.conn),
        "consumer_count": len(channel.consumers),
        "messages_unacknowledged": len(channel.unacked),
        "messages_unconfirmed": 0,
        "messages_uncommitted": 0,
        "acks_uncommitted": 0,
        "prefetch_count": channel.prefetch,
        "global_prefetch_count": channel.channel_prefetch,
        "confirm": channel.confirming,
        "transactional": channel.transactional,
    }
    stats = message_stats(channel.stats, sampler_of(request).rates(channel), CHANNEL_FIELDS)
    if stats is not None:
        info["message_stats"] = stats
    return info


def consumer_info(channel: ServerChannel, consumer: Consumer) -> dict[str, Any]:
    conn = channel.conn
    return {
        "consumer_tag": consumer.tag,
        "queue": {"name": consumer.queue.name, "vhost": consumer.queue.context.vhost},
        "channel_details": {
            **_connection_details(conn),
            "name": _channel_name(channel),
            "number": channel.id,
            "connection_name": connection_name(conn),
            "user": conn.snapshot().user,
        },
        "ack_required": not consumer.no_ack,
        "exclusive": consumer.exclusive,
        "prefetch_count": consumer.prefetch,
        "priority": consumer.priority,
        "arguments": {"x-priority": consumer.priority} if consumer.priority else {},
        "active": True,
        "activity_status": "up",
    }


def _channels(request: web.Request, vhost: str | None = None) -> list[ServerChannel]:
    return [
        channel
        for conn in visible_connections(request)
        if vhost is None or conn.snapshot().vhost == vhost
        for channel in conn.snapshot().channels
    ]


def consumers_of(request: web.Request, vhost: str | None = None) -> list[dict[str, Any]]:
    return [
        consumer_info(channel, consumer)
        for channel in _channels(request, vhost)
        for consumer in channel.consumers.values()
    ]


def _connection(request: web.Request) -> AMQPConnection:
    name = request.match_info["name"]
    for conn in visible_connections(request):
        if connection_name(conn) == name:
            return conn
    not_found()


async def list_connections(request: web.Request) -> web.StreamResponse:
    vhost = request.match_info.get("vhost")
    if vhost is not None:
        vhost_for(request)
    conns = [
        c for c in visible_connections(request) if vhost is None or c.snapshot().vhost == vhost
    ]
    return await list_response(request, await sliced(lambda c: connection_info(request, c), conns))


async def get_connection(request: web.Request) -> web.Response:
    return json_response(connection_info(request, _connection(request)))


async def close_connection(request: web.Request) -> web.Response:
    """RabbitMQ's DELETE: the client gets connection.close 320 with ``X-Reason`` if given."""
    conn = _connection(request)
    if conn.snapshot().user != user_of(request).name:
        require_tag(request, "administrator")
    reason = request.headers.get("X-Reason")
    conn.close(320, f"CONNECTION_FORCED - {reason}" if reason else CLOSED_HERE)
    return no_content()


async def connection_channels(request: web.Request) -> web.StreamResponse:
    conn = _connection(request)
    channels = conn.snapshot().channels
    return await list_response(request, [channel_info(request, c) for c in channels])


async def list_channels(request: web.Request) -> web.StreamResponse:
    vhost = request.match_info.get("vhost")
    if vhost is not None:
        vhost_for(request)
    channels = _channels(request, vhost)
    return await list_response(request, await sliced(lambda c: channel_info(request, c), channels))


async def get_channel(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    for channel in _channels(request):
        if _channel_name(channel) == name:
            info = channel_info(request, channel)
            info["consumer_details"] = [
                consumer_info(channel, c) for c in channel.consumers.values()
            ]
            return json_response(info)
    not_found()


async def list_consumers(request: web.Request) -> web.StreamResponse:
    vhost = request.match_info.get("vhost")
    if vhost is not None:
        vhost_for(request)
    pairs = [(ch, c) for ch in _channels(request, vhost) for c in ch.consumers.values()]
    return await list_response(request, await sliced(lambda cc: consumer_info(*cc), pairs))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/connections", list_connections)
    router.add_get("/api/vhosts/{vhost}/connections", list_connections)
    router.add_get("/api/connections/{name}", get_connection)
    router.add_delete("/api/connections/{name}", close_connection)
    router.add_get("/api/connections/{name}/channels", connection_channels)
    router.add_get("/api/channels", list_channels)
    router.add_get("/api/vhosts/{vhost}/channels", list_channels)
    router.add_get("/api/channels/{name}", get_channel)
    router.add_get("/api/consumers", list_consumers)
    router.add_get("/api/consumers/{vhost}", list_consumers)
