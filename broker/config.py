"""Broker settings: defaults, a TOML file, and the users, permissions and limits it declares.

Example file::

    host = "0.0.0.0"
    port = 5672
    stream_port = 5552                 # RabbitMQ's stream protocol on the same streams; 0: none
    heartbeat = 60                     # seconds proposed in connection.tune; 0 disables
    frame_max = 131072
    channel_max = 2047
    memory_high_watermark = 1073741824 # bytes of queued message bodies; above it publishers block
    vhosts = ["/", "staging"]
    loopback_users = ["guest"]         # these users may connect from 127.0.0.0/8 and ::1 only

    max_message_size = 16777216        # bytes of one message body; larger: 406 on the channel
    open_files_limit = 0               # soft RLIMIT_NOFILE set at start; 0: the hard limit
    connection_max = 10000             # open connections in total; 0: as many as the open
                                       # files limit allows (the lower of the two applies)
    user_connection_max = 0            # open connections per user unless the user says; 0: none
    vhost_queue_max = 100000           # queues per virtual host; 0: no limit
    vhost_exchange_max = 10000         # exchanges declared per virtual host; 0: no limit
    handshake_timeout = 10.0           # seconds from TCP connect to connection.open
    auth_failure_delay = 1.0           # seconds before a refused login is closed with 403
    redirect = { staging = ["10.0.0.2:5672", "10.0.0.3"] }  # 0-9/0-8 clients of vhost
                                       # "staging" are redirected there unless they insist

    [tls]                              # an amqps listener besides the amqp one
    port = 5671
    certfile = "server.pem"
    keyfile = "server.key"
    cacertfile = "ca.pem"              # verifies client certificates
    verify = "verify_peer"             # or "verify_none": client certificates are not asked for
    fail_if_no_peer_cert = false       # true: a client without a certificate is refused
    stream_port = 5551                 # the stream protocol over TLS too (unset: not)

    [management]                       # the HTTP API, console and /metrics (on by default)
    enabled = true
    host = "127.0.0.1"
    port = 15672
    prometheus_port = 15692            # /metrics alone too, as rabbitmq_prometheus (unset: off)
    [management.tls]                   # HTTPS instead of HTTP; keys as [tls]'s, but port
    certfile = "server.pem"
    keyfile = "server.key"

    [users.app]
    password = "secret"                # or password_hash = "<RabbitMQ SHA-256 hash>"
    tags = ["management"]
    max_connections = 50               # this user's limit (overrides user_connection_max)
    [users.app.permissions."/"]        # regular expressions over resource names, as RabbitMQ's
    configure = "^app-"
    write = "^app-|^amq\\.default$"
    read = ".*"
    [users.app.topic_permissions."/".orders]   # topic exchange "orders" in vhost "/"
    write = "^{username}\\."          # routing keys this user may publish with
    read = "^order\\."                # binding keys it may bind (and unbind) queues with

A user may instead list ``vhosts = ["/", "staging"]``: full permissions (".*") on each.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .auth import check_password, hash_password

if TYPE_CHECKING:
    from .store.topology import Topology

tomllib: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

_VERIFY_MODES = ("verify_peer", "verify_none")


@dataclass(frozen=True)
class Permission:
    """A user's rights in one virtual host: regular expressions searched in resource names
    (``re.search``, as RabbitMQ's ``re:run``); an empty string permits nothing."""

    configure: str = ".*"
    write: str = ".*"
    read: str = ".*"

    def __post_init__(self) -> None:
        for kind in ("configure", "write", "read"):
            try:
                re.compile(getattr(self, kind))
            except re.error as e:
                raise ValueError(f"permission {kind}={getattr(self, kind)!r}: {e}") from None


@dataclass(frozen=True)
class TopicPermission:
    """A user's rights on the routing keys of one topic exchange in one virtual host
    (RabbitMQ's topic authorisation): regular expressions searched in the routing key of a
    publish (``write``) and in the binding key of a queue.bind, exchange.bind or their
    unbinds with the exchange as source (``read``). ``{username}`` and ``{vhost}`` stand for
    the connection's, replaced as they are (not escaped). An empty string permits only the
    empty key. An exchange with no topic permission for the user is not restricted."""

    write: str = ".*"
    read: str = ".*"

    def __post_init__(self) -> None:
        for kind in ("write", "read"):
            try:
                re.compile(getattr(self, kind))
            except re.error as e:
                raise ValueError(f"topic permission {kind}={getattr(self, kind)!r}: {e}") from None


#: (user, virtual host, topic exchange) -> what the user may do with its routing keys
TopicPermissions = dict[tuple[str, str, str], TopicPermission]


@dataclass
class User:
    name: str
    password_hash: str
    #: virtual host name -> what the user may do there; a vhost not listed is refused
    permissions: dict[str, Permission] = field(default_factory=lambda: {"/": Permission()})
    tags: list[str] = field(default_factory=list)
    #: this user's open-connection limit; None: the broker's ``user_connection_max``
    max_connections: int | None = None

    @property
    def vhosts(self) -> list[str]:
        """The virtual hosts the user may open."""
        return list(self.permissions)

    def authenticate(self, password: str) -> bool:
        return check_password(password, self.password_hash)


@dataclass
class TLSConfig:
    """The amqps listener (RabbitMQ's ``listeners.ssl`` and ``ssl_options``)."""

    certfile: str
    keyfile: str
    port: int = 5671
    cacertfile: str | None = None
    verify: str = "verify_none"
    fail_if_no_peer_cert: bool = False
    #: The stream protocol over TLS (RabbitMQ's ``stream.listeners.ssl``); None: no listener.
    stream_port: int | None = None

    def __post_init__(self) -> None:
        if self.verify not in _VERIFY_MODES:
            raise ValueError(f"tls.verify={self.verify!r}: one of {_VERIFY_MODES}")
        if self.verify == "verify_peer" and not self.cacertfile:
            raise ValueError("tls.verify = 'verify_peer' needs tls.cacertfile")


@dataclass
class ManagementConfig:
    """The management HTTP listener (RabbitMQ's ``management.tcp``): API, console, metrics."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 15672
    #: bytes of a request body above which it is refused with 413
    max_body: int = 20 << 20
    #: ``[management.tls]``: HTTPS on ``port`` with these settings (as ``[tls]``'s; its
    #: ``port`` is not used)
    tls: TLSConfig | None = None
    #: a second listener serving /metrics only, as rabbitmq_prometheus' (15692 there; 0: an
    #: ephemeral port); None: metrics on ``port`` only
    prometheus_port: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.tls, dict):
            self.tls = TLSConfig(**self.tls)


def _default_users() -> dict[str, User]:
    return {"guest": User("guest", hash_password("guest"), {"/": Permission()}, ["administrator"])}


@dataclass
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 5672
    #: The stream protocol's listener (RabbitMQ's ``stream.listeners.tcp``); None: none.
    #: In a file, 0 means none (the embedded ``Broker`` takes 0 as an ephemeral port).
    stream_port: int | None = 5552
    data_dir: str | None = None
    log_level: str = "INFO"
    heartbeat: int = 60
    frame_max: int = 131072
    channel_max: int = 2047
    memory_high_watermark: int = 1 << 30
    #: bytes of free disk space under data_dir below which publishers block
    disk_free_limit: int = 50_000_000
    #: A connection stops reading its socket while this many bytes wait to be written to it.
    write_buffer_high: int = 4 << 20
    vhosts: list[str] = field(default_factory=lambda: ["/"])
    users: dict[str, User] = field(default_factory=_default_users)
    loopback_users: list[str] = field(default_factory=lambda: ["guest"])
    tls: TLSConfig | None = None
    max_message_size: int = 16 << 20
    #: The soft RLIMIT_NOFILE the broker sets at start; 0: the hard limit.
    open_files_limit: int = 0
    connection_max: int = 10000
    user_connection_max: int = 0
    vhost_queue_max: int = 100000
    vhost_exchange_max: int = 10000
    handshake_timeout: float = 10.0
    auth_failure_delay: float = 1.0
    #: AMQP 0-9/0-8 only: virtual host -> servers ("host[:port]") its clients are sent to
    #: with connection.redirect unless they insist (0-9-1 has no redirect).
    redirect: dict[str, list[str]] = field(default_factory=dict)
    #: Declared under each user (``[users.<name>.topic_permissions.<vhost>.<exchange>]``).
    topic_permissions: TopicPermissions = field(default_factory=dict)
    management: ManagementConfig = field(default_factory=ManagementConfig)

    def connection_limit_of(self, user: User) -> int:
        """The user's open-connection limit; 0 means none."""
        if user.max_connections is not None:
            return user.max_connections
        return self.user_connection_max

    def merge_topic_permissions(self, topology: Topology) -> None:
        """Join the topic permissions with a data directory's, as the store joins users and
        permissions, and before it does (``users`` holds the configured users only): the
        stored ones of a user the configuration does not define come back, and a defined
        user's are stored, replacing what was. The store's merge saves the topology."""
        from .store.topology import TopicPermissionDef

        stored = topology.topic_permissions
        for key, d in list(stored.items()):
            if key[0] in self.users:
                del stored[key]
            else:
                self.topic_permissions[key] = TopicPermission(d.write, d.read)
        for (user, vhost, exchange), p in self.topic_permissions.items():
            stored[(user, vhost, exchange)] = TopicPermissionDef(
                user, vhost, exchange, p.write, p.read
            )

    @classmethod
    def from_toml(cls, path: str | Path) -> BrokerConfig:
        with open(path, "rb") as f:
            return cls.from_dict(tomllib.load(f))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BrokerConfig:
        data = dict(data)
        users_data = data.pop("users", None)
        tls_data = data.pop("tls", None)
        management_data = data.pop("management", None)
        config = cls(**data)
        if config.stream_port == 0:
            config.stream_port = None
        if isinstance(management_data, dict):
            config.management = ManagementConfig(**management_data)
        if users_data is not None:
            config.users = {name: _user(name, spec) for name, spec in users_data.items()}
            for name, spec in users_data.items():
                config.topic_permissions.update(_topic_permissions(name, spec))
        if tls_data is not None:
            config.tls = tls_data if isinstance(tls_data, TLSConfig) else TLSConfig(**tls_data)
        return config


def _user(name: str, spec: dict[str, Any] | User) -> User:
    if isinstance(spec, User):
        return spec
    if "password_hash" in spec:
        password_hash = spec["password_hash"]
    elif "password" in spec:
        password_hash = hash_password(spec["password"])
    else:
        raise ValueError(f"user {name!r} needs password or password_hash")
    if "permissions" in spec:
        permissions = {vhost: Permission(**p) for vhost, p in spec["permissions"].items()}
    else:
        permissions = {vhost: Permission() for vhost in spec.get("vhosts", ["/"])}
    return User(
        name,
        password_hash,
        permissions,
        list(spec.get("tags", [])),
        spec.get("max_connections"),
    )


def _topic_permissions(name: str, spec: dict[str, Any] | User) -> TopicPermissions:
    """A user's ``topic_permissions`` section: vhost -> exchange -> write and read."""
    sections = {} if isinstance(spec, User) else spec.get("topic_permissions", {})
    return {
        (name, vhost, exchange): TopicPermission(**p)
        for vhost, exchanges in sections.items()
        for exchange, p in exchanges.items()
    }
