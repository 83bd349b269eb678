"""HTTP basic authentication and RabbitMQ's management tags.

What a tag allows, as RabbitMQ's management plugin: ``management`` sees the virtual hosts
the user has permissions in and its own connections and channels; ``policymaker`` is
management plus policies; ``monitoring`` sees every virtual host, connection and channel and
the node; ``administrator`` does everything (users, permissions, vhosts, definitions).
A user with none of these tags cannot log in here. In a virtual host, declaring, deleting,
publishing, getting and binding need the same configure / write / read permissions as over
AMQP (``broker.access``). The password is never logged.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

from aiohttp import web

from amqp_protocol import Method

from ..access import Access
from ..config import User
from ..model.vhost import VirtualHost
from .context import broker_of
from .responses import ApiError, not_authorised, not_found

log = logging.getLogger("broker.management")

MANAGEMENT_TAGS = frozenset({"administrator", "monitoring", "policymaker", "management"})
#: The tags that include each tag.
_INCLUDED_IN = {
    "administrator": {"administrator"},
    "monitoring": {"administrator", "monitoring"},
    "policymaker": {"administrator", "policymaker"},
    "management": MANAGEMENT_TAGS,
}
_LOOPBACK = ("127.", "::1", "::ffff:127.")
#: the authenticated user of an API request
USER: web.RequestKey[User] = web.RequestKey("user", User)


def _credentials(header: str) -> tuple[str, str] | None:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    name, sep, password = decoded.partition(":")
    return (name, password) if sep else None


def authenticate(request: web.Request) -> User:
    """The request's user, or 401 with RabbitMQ's reason."""
    config = broker_of(request).config
    credentials = _credentials(request.headers.get("Authorization", ""))
    if credentials is None:
        not_authorised("Login failed")
    user = config.users.get(credentials[0])
    if user is None or not user.authenticate(credentials[1]):
        log.warning("HTTP login refused for user %r from %s", credentials[0], request.remote)
        not_authorised("Login failed")
    if user.name in config.loopback_users and not (request.remote or "").startswith(_LOOPBACK):
        not_authorised("User can only log in via localhost")
    if not MANAGEMENT_TAGS & set(user.tags):
        not_authorised("Not management user")
    return user


@web.middleware
async def api_auth(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every ``/api/`` request is authenticated; the rest (console files, /metrics) not."""
    if request.path.startswith("/api/"):
        request[USER] = authenticate(request)
    return await handler(request)


def user_of(request: web.Request) -> User:
    return request[USER]


def has_tag(user: User, tag: str) -> bool:
    return bool(_INCLUDED_IN[tag] & set(user.tags))


def require_tag(request: web.Request, tag: str) -> User:
    user = user_of(request)
    if not has_tag(user, tag):
        not_authorised(f"Not {tag} user")
    return user


def sees_all(user: User) -> bool:
    """Monitoring and administrator users see every vhost, connection and channel."""
    return has_tag(user, "monitoring")


def visible_vhosts(request: web.Request) -> list[VirtualHost]:
    user = user_of(request)
    vhosts = broker_of(request).vhosts
    return [v for name, v in vhosts.items() if sees_all(user) or name in user.permissions]


def vhost_for(request: web.Request, name: str | None = None) -> VirtualHost:
    """The path's virtual host if it exists (404) and the user may see it (401)."""
    name = request.match_info["vhost"] if name is None else name
    vhost = broker_of(request).vhosts.get(name)
    if vhost is None:
        not_found()
    user = user_of(request)
    if not sees_all(user) and name not in user.permissions:
        not_authorised(f"Access refused to vhost '{name}' for user '{user.name}'")
    return vhost


def vhosts_in_scope(request: web.Request) -> list[VirtualHost]:
    """The path's vhost if it names one, else all the user may see."""
    return [vhost_for(request)] if "vhost" in request.match_info else visible_vhosts(request)


def access_in(request: web.Request, vhost: VirtualHost) -> Access:
    """The user's AMQP permissions in ``vhost``, for mutations and message operations."""
    user = user_of(request)
    if vhost.name not in user.permissions:
        raise ApiError(
            401, "not_authorised", f"access to vhost '{vhost.name}' refused for user '{user.name}'"
        )
    return Access(user, vhost, broker_of(request).config)


def authorize(access: Access, method: str, **fields: Any) -> None:
    """Check what the AMQP method ``method`` with these fields would need (``Access``'s
    rules: permissions, topic permissions, vhost limits); refusals raise its AMQP error."""
    access.check(cast(Method, SimpleNamespace(NAME=method, **fields)))
