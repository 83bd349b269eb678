"""Who may connect, and to which virtual host: the login a connection.start-ok asks for
(``authenticate``), the checks of connection.open (``admit``), and the server properties a
connection.start announces (``server_properties``)."""

from __future__ import annotations

import logging
import platform
from typing import Any

from amqp_protocol import errors

from ..auth import EXTERNAL, parse_response
from ..config import BrokerConfig, User
from ..model.vhost import VirtualHost
from ..version import __version__
from .abc import Server

log = logging.getLogger("broker.connection")

_CAPABILITIES = {
    name: True
    for name in (
        "publisher_confirms",
        "exchange_exchange_bindings",
        "basic.nack",
        "consumer_cancel_notify",
        "connection.blocked",
        "consumer_priorities",
        "per_consumer_qos",
        "authentication_failure_close",
        "direct_reply_to",
    )
}
_LOOPBACK_PREFIXES = ("127.", "::1", "::ffff:127.")


def server_properties() -> dict[str, Any]:
    """connection.start's server properties, before the dialect adds its own."""
    return {
        "product": "amqp-spark broker",
        "version": __version__,
        "platform": f"Python {platform.python_version()}",
        "copyright": "amqp-spark contributors",
        "information": "https://www.rabbitmq.com/amqp-0-9-1-reference.html",
        "cluster_name": "amqp-spark",
        "capabilities": dict(_CAPABILITIES),
    }


#: Why ``authenticate`` refuses a loopback-only user connecting from elsewhere (the end of
#: its reason: the stream protocol answers it with a code of its own).
LOOPBACK_ONLY = "may connect from loopback only"


def authenticate(
    config: BrokerConfig, mechanism: str, response: bytes, peer: str, common_name: str | None
) -> tuple[User | None, str]:
    """The user a start-ok from ``peer`` authenticates, or None and why not (for the log
    only); ``common_name``: the verified client certificate's (TLS), for EXTERNAL."""
    if mechanism == EXTERNAL:
        if common_name is None:
            return None, "EXTERNAL without a verified client certificate"
        user = config.users.get(common_name)
        if user is None:
            return None, f"no user {common_name!r} for the client certificate"
    else:
        credentials = parse_response(mechanism, response)
        if credentials is None:
            return None, "malformed response or unsupported mechanism"
        user = config.users.get(credentials[0])
        if user is None or not user.authenticate(credentials[1]):
            return None, f"wrong user name or password for {credentials[0]!r}"
    if user.name in config.loopback_users and not peer.startswith(_LOOPBACK_PREFIXES):
        return None, f"user {user.name!r} {LOOPBACK_ONLY}"
    return user, ""


def admit(server: Server, user: User, name: str, peer: str) -> VirtualHost:
    """connection.open of virtual host ``name`` by ``user`` from ``peer``: the virtual host,
    or the error refusing it (no such host, no permission, a connection limit reached)."""
    vhost = server.vhosts.get(name)
    if vhost is None:
        raise errors.NotAllowed(f"NOT_ALLOWED - vhost {name} not found")
    vhost.check_connection_limit(user.name, server.connections)
    if name not in user.permissions:
        raise errors.NotAllowed(
            f"NOT_ALLOWED - access to vhost '{name}' refused for user '{user.name}'"
        )
    limit = server.config.connection_limit_of(user)
    if limit and _open_connections_of(server, user) >= limit:
        log.warning("connection %s: user %r is at its connection limit", peer, user.name)
        raise errors.NotAllowed(
            f"NOT_ALLOWED - Connection refused for user '{user.name}'. "
            f"User connection limit ({limit}) is reached"
        )
    return vhost


def _open_connections_of(server: Server, user: User) -> int:
    return sum(1 for c in server.connections if c.user == user.name and c.opened)
