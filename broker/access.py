"""What a connection's user may do in its virtual host: RabbitMQ's configure / write / read
permissions on every method that names a resource, and the per-vhost resource limits.

The permission each method needs (RabbitMQ's access-control table):

=========================  ===========================  ==================  ================
method                     configure                    write               read
=========================  ===========================  ==================  ================
exchange.declare           exchange (unless passive)    alternate exchange  exchange (if AE)
exchange.delete            exchange
queue.declare              queue (unless passive)       dead-letter exch.   queue (if DLX)
queue.delete               queue
exchange.bind / unbind                                  destination         source
queue.bind / unbind                                     queue               exchange
basic.publish                                           exchange
basic.get / consume                                                         queue
queue.purge                                                                 queue
=========================  ===========================  ==================  ================

Topic authorisation (RabbitMQ's, per user, vhost and topic exchange, ``TopicPermission``)
comes on top: a publish to a topic exchange needs ``write`` on its routing key and on the
keys of its ``CC`` and ``BCC`` headers (RabbitMQ 4.0; 3.10 did not check those), and
queue.bind, exchange.bind and their unbinds with a topic exchange as source need ``read`` on
the binding key. A refusal names the access it lacked ("write access to topic ...").

The default exchange is named ``amq.default`` in permissions, as in RabbitMQ. A queue the
server will name is checked as ``amq.gen-`` followed by a generated-looking suffix.
Refusals are 403 ACCESS_REFUSED channel errors; a declaration over a limit is 406.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from amqp_protocol import Method, errors
from amqp_protocol.generated.any_version import (
    BasicConsume,
    BasicGet,
    BasicPublish,
    ExchangeBind,
    ExchangeDeclare,
    ExchangeDelete,
    ExchangeUnbind,
    QueueBind,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
    QueueUnbind,
)

from .config import BrokerConfig, Permission, User
from .model.exchanges import TopicExchange, sender_selected_keys
from .model.vhost import STANDARD_EXCHANGES, VirtualHost

#: What a server-named queue is checked as before the server picks its name.
SERVER_NAMED_QUEUE = "amq.gen-" + "A" * 22
_STANDARD_EXCHANGE_COUNT = len(STANDARD_EXCHANGES) + 1  # and the default exchange
_CACHE_SIZE = 4096


class Access:
    """One connection's rights: built at connection.open, consulted by its channels."""

    def __init__(self, user: User, vhost: VirtualHost, config: BrokerConfig) -> None:
        self.user = user
        self.vhost = vhost
        self.config = config
        permission = user.permissions.get(vhost.name, Permission("", "", ""))
        self._patterns = {
            kind: re.compile(getattr(permission, kind)) if getattr(permission, kind) else None
            for kind in ("configure", "write", "read")
        }
        #: topic exchange -> its write and read patterns, the variables replaced
        self._topics = {
            exchange: {
                kind: re.compile(_expand(getattr(topic, kind), user.name, vhost.name) or "^$")
                for kind in ("write", "read")
            }
            for (user_name, vhost_name, exchange), topic in config.topic_permissions.items()
            if user_name == user.name and vhost_name == vhost.name
        }
        #: (kind, resource or "topic", name or exchange and key) -> allowed; bounded
        self._allowed: dict[tuple[str, str, str], bool] = {}

    def check(self, method: Method, last_queue: str | None = None) -> None:
        """Raise the error RabbitMQ sends if this user may not perform ``method``.
        ``last_queue`` is the queue an empty queue name refers to on the channel."""
        rule = _RULES.get(method.NAME)
        if rule is not None:
            rule(self, method, last_queue or "")

    # -- permissions --------------------------------------------------------------------------

    def require(self, kind: str, resource: str, name: str) -> None:
        """``kind`` permission ("configure", "write", "read") on ``resource`` ("queue" or
        "exchange") ``name``, else 403."""
        if resource == "exchange" and name == "":
            name = "amq.default"
        key = (kind, resource, name)
        allowed = self._allowed.get(key)  # known: no call on the per-publish path
        if allowed is None:
            allowed = self._decide(key, self._patterns[kind], name)
        if not allowed:
            raise errors.AccessRefused(
                f"ACCESS_REFUSED - access to {resource} '{name}' in vhost '{self.vhost.name}' "
                f"refused for user '{self.user.name}'"
            )

    def require_topic(self, kind: str, exchange_name: str, routing_key: str) -> None:
        """``kind`` topic permission ("write" or "read") on ``routing_key`` when
        ``exchange_name`` is a topic exchange the user has topic permissions on, else 403.
        An exchange that does not exist is left to the method (404), and an internal one
        to basic.publish's refusal, which RabbitMQ gives first."""
        patterns = self._topics.get(exchange_name)
        if patterns is None:
            return
        exchange = self.vhost.exchanges.get(exchange_name)
        if not isinstance(exchange, TopicExchange) or exchange.internal and kind == "write":
            return
        key = (kind, "topic", f"{exchange_name}\0{routing_key}")
        allowed = self._allowed.get(key)
        if allowed is None:
            allowed = self._decide(key, patterns[kind], routing_key)
        if not allowed:
            raise errors.AccessRefused(
                f"ACCESS_REFUSED - {kind} access to topic '{routing_key}' in exchange "
                f"'{exchange_name}' in vhost '{self.vhost.name}' refused for user "
                f"'{self.user.name}'"
            )

    def require_sender_selected(self, exchange_name: str, headers: dict[str, Any]) -> None:
        """The ``CC`` then ``BCC`` keys of a publish's ``headers`` need write topic
        permission as its routing key does (RabbitMQ 4.0; 3.10 checked none)."""
        if self._topics:
            for key in sender_selected_keys(headers):
                self.require_topic("write", exchange_name, key)

    def _decide(
        self, key: tuple[str, str, str], pattern: re.Pattern[str] | None, subject: str
    ) -> bool:
        """Whether ``pattern`` is found in ``subject``, remembered under ``key``."""
        allowed = pattern is not None and pattern.search(subject) is not None
        if len(self._allowed) >= _CACHE_SIZE:
            self._allowed.clear()
        self._allowed[key] = allowed
        return allowed

    # -- rules --------------------------------------------------------------------------------

    def _exchange_declare(self, m: ExchangeDeclare, last_queue: str) -> None:
        if m.passive:
            return
        self.require("configure", "exchange", m.exchange)
        alternate = (m.arguments or {}).get("alternate-exchange")
        if isinstance(alternate, str):
            self.require("write", "exchange", alternate)
            self.require("read", "exchange", m.exchange)
        limit = self.config.vhost_exchange_max
        exchanges = self.vhost.exchanges
        over = len(exchanges) - _STANDARD_EXCHANGE_COUNT >= limit
        if limit and over and m.exchange not in exchanges:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - cannot declare exchange '{m.exchange}': exchange "
                f"limit in vhost '{self.vhost.name}' ({limit}) is reached"
            )

    def _exchange_delete(self, m: ExchangeDelete, last_queue: str) -> None:
        self.require("configure", "exchange", m.exchange)

    def _exchange_bind(self, m: ExchangeBind | ExchangeUnbind, last_queue: str) -> None:
        self.require("write", "exchange", m.destination)
        self.require("read", "exchange", m.source)
        if self._topics:
            self.require_topic("read", m.source, m.routing_key)

    def _queue_declare(self, m: QueueDeclare, last_queue: str) -> None:
        if m.passive:
            return
        name = m.queue or SERVER_NAMED_QUEUE
        self.require("configure", "queue", name)
        dead_letter = (m.arguments or {}).get("x-dead-letter-exchange")
        if isinstance(dead_letter, str):
            self.require("write", "exchange", dead_letter)
            self.require("read", "queue", name)
        limit = self.config.vhost_queue_max
        queues = self.vhost.queues
        if limit and name not in queues and len(queues) >= limit:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - cannot declare queue '{m.queue}': queue limit in vhost "
                f"'{self.vhost.name}' ({limit}) is reached"
            )

    def _queue_delete(self, m: QueueDelete, last_queue: str) -> None:
        self.require("configure", "queue", m.queue or last_queue)

    def _queue_bind(self, m: QueueBind | QueueUnbind, last_queue: str) -> None:
        self.require("write", "queue", m.queue or last_queue)
        self.require("read", "exchange", m.exchange)
        if self._topics:
            self.require_topic("read", m.exchange, m.routing_key)

    def _queue_read(self, m: QueuePurge | BasicGet | BasicConsume, last_queue: str) -> None:
        self.require("read", "queue", m.queue or last_queue)

    def _basic_publish(self, m: BasicPublish, last_queue: str) -> None:
        self.require("write", "exchange", m.exchange)
        if self._topics:
            self.require_topic("write", m.exchange, m.routing_key)


def _expand(pattern: str, username: str, vhost: str) -> str:
    """A topic permission with its variables replaced, unescaped, as RabbitMQ does."""
    return pattern.replace("{username}", username).replace("{vhost}", vhost)


_RULES: dict[str, Callable[[Access, Any, str], None]] = {
    "exchange.declare": Access._exchange_declare,
    "exchange.delete": Access._exchange_delete,
    "exchange.bind": Access._exchange_bind,
    "exchange.unbind": Access._exchange_bind,
    "queue.declare": Access._queue_declare,
    "queue.delete": Access._queue_delete,
    "queue.bind": Access._queue_bind,
    "queue.unbind": Access._queue_bind,
    "queue.purge": Access._queue_read,
    "basic.get": Access._queue_read,
    "basic.consume": Access._queue_read,
    "basic.publish": Access._basic_publish,
}
