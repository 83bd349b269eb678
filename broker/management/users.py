"""``/api/users``, ``/api/permissions``, ``/api/topic-permissions`` and ``/api/whoami``'s
neighbours: who may log in, with which tags, and what they may do in each vhost.
Administrators only, as in RabbitMQ."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..auth import hash_password
from ..config import Permission, TopicPermission, User
from .access_store import save_access
from .auth import require_tag, vhost_for
from .context import broker_of
from .listing import list_response
from .responses import (
    bad_request,
    created,
    json_response,
    no_content,
    not_found,
    read_json,
    text,
)

if TYPE_CHECKING:
    from .managed import ManagedBroker

HASHING_ALGORITHM = "rabbit_password_hashing_sha256"


def user_info(user: User) -> dict[str, Any]:
    return {
        "name": user.name,
        "password_hash": user.password_hash,
        "hashing_algorithm": HASHING_ALGORITHM,
        "tags": list(user.tags),
        "limits": {"max-connections": user.max_connections} if user.max_connections else {},
    }


def parse_tags(value: Any) -> list[str]:
    """Tags as a comma-separated string (RabbitMQ 3.x) or a list."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return list(value)
    bad_request(f"tags={value!r}: a comma-separated string or a list of strings")


def put_user_from(broker: ManagedBroker, name: str, body: dict[str, Any]) -> bool:
    """Create or change a user from a PUT body or a definitions entry; True if it existed."""
    if not name:
        bad_request("a user needs a name")
    existing = broker.config.users.get(name)
    algorithm = body.get("hashing_algorithm", HASHING_ALGORITHM)
    if "password" in body:
        password_hash = hash_password(text(body, "password"))
    elif "password_hash" in body:
        if algorithm != HASHING_ALGORITHM:
            bad_request(f"hashing_algorithm={algorithm!r}: only {HASHING_ALGORITHM} is supported")
        password_hash = text(body, "password_hash")
    elif existing is not None:
        password_hash = existing.password_hash
    else:
        bad_request("a new user needs password or password_hash")
    tags = parse_tags(body.get("tags", ""))
    if existing is not None:
        existing.password_hash, existing.tags = password_hash, tags
    else:
        broker.config.users[name] = User(name, password_hash, {}, tags)
    return existing is not None


def set_permission(broker: ManagedBroker, vhost: str, user_name: str, body: dict[str, Any]) -> bool:
    user = _user(broker, user_name)
    if vhost not in broker.vhosts:
        bad_request(f"vhost '{vhost}' does not exist")
    try:
        permission = Permission(text(body, "configure"), text(body, "write"), text(body, "read"))
    except ValueError as e:
        bad_request(str(e))
    existed = vhost in user.permissions
    user.permissions[vhost] = permission
    return existed


def set_topic_permission(
    broker: ManagedBroker, vhost: str, user_name: str, body: dict[str, Any]
) -> bool:
    _user(broker, user_name)
    if vhost not in broker.vhosts:
        bad_request(f"vhost '{vhost}' does not exist")
    exchange = text(body, "exchange")
    try:
        permission = TopicPermission(text(body, "write"), text(body, "read"))
    except ValueError as e:
        bad_request(str(e))
    key = (user_name, vhost, exchange)
    existed = key in broker.config.topic_permissions
    broker.config.topic_permissions[key] = permission
    return existed


def _user(broker: ManagedBroker, name: str) -> User:
    user = broker.config.users.get(name)
    if user is None:
        not_found()
    return user


def permissions_list(broker: ManagedBroker) -> list[dict[str, Any]]:
    return [
        {"user": u.name, "vhost": v, "configure": p.configure, "write": p.write, "read": p.read}
        for u in broker.config.users.values()
        for v, p in u.permissions.items()
    ]


def topic_permissions_list(broker: ManagedBroker) -> list[dict[str, Any]]:
    return [
        {"user": u, "vhost": v, "exchange": e, "write": p.write, "read": p.read}
        for (u, v, e), p in broker.config.topic_permissions.items()
    ]


def delete_user_named(broker: ManagedBroker, name: str) -> None:
    """The user goes with its permissions; its open connections are closed."""
    _user(broker, name)
    del broker.config.users[name]
    for key in [k for k in broker.config.topic_permissions if k[0] == name]:
        del broker.config.topic_permissions[key]
    for conn in list(broker.connections):
        if conn.user == name:
            conn.close(320, f"CONNECTION_FORCED - user '{name}' was deleted")


# -- handlers ---------------------------------------------------------------------------------


async def list_users(request: web.Request) -> web.StreamResponse:
    require_tag(request, "administrator")
    users = list(broker_of(request).config.users.values())
    if request.path.endswith("/without-permissions"):
        users = [u for u in users if not u.permissions]
    return await list_response(request, [user_info(u) for u in users])


async def get_user(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    return json_response(user_info(_user(broker_of(request), request.match_info["user"])))


async def put_user(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    broker = broker_of(request)
    existed = put_user_from(broker, request.match_info["user"], await read_json(request))
    save_access(broker)
    return created(existed)


async def delete_user(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    broker = broker_of(request)
    delete_user_named(broker, request.match_info["user"])
    save_access(broker)
    return no_content()


async def bulk_delete_users(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    broker = broker_of(request)
    names = (await read_json(request)).get("users")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        bad_request("users: a list of user names")
    for name in names:
        if name in broker.config.users:
            delete_user_named(broker, name)
    save_access(broker)
    return no_content()


def _filtered(request: web.Request, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Permissions of the path's user or vhost, if it names one (404 if unknown)."""
    broker = broker_of(request)
    if "user" in request.match_info:
        _user(broker, request.match_info["user"])
        items = [i for i in items if i["user"] == request.match_info["user"]]
    if "vhost" in request.match_info:
        vhost_for(request)
        items = [i for i in items if i["vhost"] == request.match_info["vhost"]]
    return items


async def list_permissions(request: web.Request) -> web.StreamResponse:
    require_tag(request, "administrator")
    return await list_response(request, _filtered(request, permissions_list(broker_of(request))))


async def list_topic_permissions(request: web.Request) -> web.StreamResponse:
    require_tag(request, "administrator")
    items = topic_permissions_list(broker_of(request))
    return await list_response(request, _filtered(request, items))


async def get_permission(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    found = _filtered(request, permissions_list(broker_of(request)))
    if not found:
        not_found()
    return json_response(found[0])


async def _put_for_vhost_user(
    request: web.Request, setter: Callable[[ManagedBroker, str, str, dict[str, Any]], bool]
) -> web.Response:
    """PUT of a permission or topic permission of the path's vhost and user."""
    require_tag(request, "administrator")
    broker, m = broker_of(request), request.match_info
    if m["vhost"] not in broker.vhosts:
        not_found()
    existed = setter(broker, m["vhost"], m["user"], await read_json(request))
    save_access(broker)
    return created(existed)


async def put_permission(request: web.Request) -> web.Response:
    return await _put_for_vhost_user(request, set_permission)


async def delete_permission(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    broker, m = broker_of(request), request.match_info
    user = _user(broker, m["user"])
    if user.permissions.pop(m["vhost"], None) is None:
        not_found()
    save_access(broker)
    return no_content()


async def get_topic_permission(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    found = _filtered(request, topic_permissions_list(broker_of(request)))
    if not found:
        not_found()
    return json_response(found)


async def put_topic_permission(request: web.Request) -> web.Response:
    return await _put_for_vhost_user(request, set_topic_permission)


async def delete_topic_permission(request: web.Request) -> web.Response:
    """All of the user's topic permissions in the vhost, or only ``?exchange=``'s."""
    require_tag(request, "administrator")
    broker, m = broker_of(request), request.match_info
    exchange = request.query.get("exchange")
    keys = [
        k
        for k in broker.config.topic_permissions
        if k[:2] == (m["user"], m["vhost"]) and exchange in (None, k[2])
    ]
    if not keys:
        not_found()
    for key in keys:
        del broker.config.topic_permissions[key]
    save_access(broker)
    return no_content()


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/users", list_users)
    router.add_get("/api/users/without-permissions", list_users)
    router.add_post("/api/users/bulk-delete", bulk_delete_users)
    router.add_get("/api/users/{user}", get_user)
    router.add_put("/api/users/{user}", put_user)
    router.add_delete("/api/users/{user}", delete_user)
    router.add_get("/api/users/{user}/permissions", list_permissions)
    router.add_get("/api/users/{user}/topic-permissions", list_topic_permissions)
    router.add_get("/api/permissions", list_permissions)
    router.add_get("/api/vhosts/{vhost}/permissions", list_permissions)
    router.add_get("/api/permissions/{vhost}/{user}", get_permission)
    router.add_put("/api/permissions/{vhost}/{user}", put_permission)
    router.add_delete("/api/permissions/{vhost}/{user}", delete_permission)
    router.add_get("/api/topic-permissions", list_topic_permissions)
    router.add_get("/api/vhosts/{vhost}/topic-permissions", list_topic_permissions)
    router.add_get("/api/topic-permissions/{vhost}/{user}", get_topic_permission)
    router.add_put("/api/topic-permissions/{vhost}/{user}", put_topic_permission)
    router.add_delete("/api/topic-permissions/{vhost}/{user}", delete_topic_permission)
