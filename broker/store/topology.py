"""Durable definitions (vhosts, users, permissions, topic permissions, exchanges, queues,
bindings) and the small versioned JSON file they live in, rewritten atomically on every
change.

Field-table arguments are kept exactly: encoded as an AMQP field table, then base64.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from amqp_protocol import values

from .errors import StoreError, from_os_error
from .files import write_atomically

TOPOLOGY_FORMAT = "amqp-spark-broker-topology"
#: 2 added ``topic_permissions``: a version-1 broker would load a file that has them and drop
#: them at its next save, so it must refuse the file instead. Version 1 files are read as they
#: are, with ``topic_permissions`` (brokers wrote them there before the version was raised) or
#: without.
TOPOLOGY_VERSION = 2
Arguments = dict[str, Any]


@dataclass(frozen=True)
class UserDef:
    name: str
    password_hash: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class PermissionDef:
    user: str
    vhost: str
    configure: str = ".*"
    write: str = ".*"
    read: str = ".*"


@dataclass(frozen=True)
class TopicPermissionDef:
    user: str
    vhost: str
    exchange: str
    write: str = ".*"
    read: str = ".*"


@dataclass(frozen=True)
class ExchangeDef:
    vhost: str
    name: str
    type: str
    auto_delete: bool = False
    internal: bool = False
    arguments: Arguments = field(default_factory=dict)


@dataclass(frozen=True)
class QueueDef:
    vhost: str
    name: str
    #: The id the journal knows the queue by; never reused, so a deleted queue's records
    #: cannot reappear in a new queue of the same name.
    queue_id: int
    auto_delete: bool = False
    arguments: Arguments = field(default_factory=dict)


@dataclass(frozen=True)
class BindingDef:
    vhost: str
    source: str
    destination: str
    #: "queue" or "exchange" (exchange-to-exchange binding)
    destination_kind: str
    routing_key: str
    arguments: Arguments = field(default_factory=dict)


@dataclass
class Topology:
    """Mutable: the broker changes it, then calls ``Store.save_topology()``."""

    vhosts: set[str] = field(default_factory=set)
    users: dict[str, UserDef] = field(default_factory=dict)
    #: (user, vhost) -> permission
    permissions: dict[tuple[str, str], PermissionDef] = field(default_factory=dict)
    #: (user, vhost, exchange) -> topic permission
    topic_permissions: dict[tuple[str, str, str], TopicPermissionDef] = field(default_factory=dict)
    #: (vhost, name) -> definition
    exchanges: dict[tuple[str, str], ExchangeDef] = field(default_factory=dict)
    queues: dict[tuple[str, str], QueueDef] = field(default_factory=dict)
    bindings: list[BindingDef] = field(default_factory=list)
    next_queue_id: int = 1

    def allocate_queue_id(self) -> int:
        queue_id = self.next_queue_id
        self.next_queue_id += 1
        return queue_id

    def to_json(self) -> bytes:
        doc = {
            "format": TOPOLOGY_FORMAT,
            "version": TOPOLOGY_VERSION,
            "next_queue_id": self.next_queue_id,
            "vhosts": sorted(self.vhosts),
            "users": [_encode(u) for u in self.users.values()],
            "permissions": [_encode(p) for p in self.permissions.values()],
            "topic_permissions": [_encode(p) for p in self.topic_permissions.values()],
            "exchanges": [_encode(e) for e in self.exchanges.values()],
            "queues": [_encode(q) for q in self.queues.values()],
            "bindings": [_encode(b) for b in self.bindings],
        }
        return json.dumps(doc, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Topology:
        """Raises ValueError, KeyError or TypeError on a malformed document."""
        doc = json.loads(data)
        if doc.get("format") != TOPOLOGY_FORMAT:
            raise ValueError("not an amqp-spark topology file")
        users = [UserDef(**{**u, "tags": tuple(u["tags"])}) for u in doc["users"]]
        permissions = [PermissionDef(**p) for p in doc["permissions"]]
        # Absent from the version-1 files of brokers that had no topic permissions.
        topics = [TopicPermissionDef(**p) for p in doc.get("topic_permissions", [])]
        exchanges = [ExchangeDef(**_decode(e)) for e in doc["exchanges"]]
        queues = [QueueDef(**_decode(q)) for q in doc["queues"]]
        return cls(
            vhosts=set(doc["vhosts"]),
            users={u.name: u for u in users},
            permissions={(p.user, p.vhost): p for p in permissions},
            topic_permissions={(p.user, p.vhost, p.exchange): p for p in topics},
            exchanges={(e.vhost, e.name): e for e in exchanges},
            queues={(q.vhost, q.name): q for q in queues},
            bindings=[BindingDef(**_decode(b)) for b in doc["bindings"]],
            next_queue_id=int(doc["next_queue_id"]),
        )


def _encode(definition: Any) -> dict[str, Any]:
    doc = asdict(definition)
    if "arguments" in doc:
        doc["arguments"] = base64.b64encode(values.encode_table(doc["arguments"])).decode()
    return doc


def _decode(doc: dict[str, Any]) -> dict[str, Any]:
    if "arguments" in doc:
        table, _ = values.decode_table(base64.b64decode(doc["arguments"]), 0)
        doc = {**doc, "arguments": table}
    return doc


def load_topology(path: Path) -> Topology:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Topology()
    except OSError as e:
        raise from_os_error(path, "cannot read the topology file", e) from e
    version = _version_of(data)
    if version is not None and version > TOPOLOGY_VERSION:
        raise StoreError(
            path,
            f"topology format version {version} is newer than this broker's ({TOPOLOGY_VERSION})",
            "Run a newer amqp-spark broker on this data directory, or point --data-dir elsewhere",
        )
    try:
        return Topology.from_json(data)
    except (ValueError, KeyError, TypeError) as e:
        raise StoreError(
            path,
            f"corrupt topology file ({e})",
            "Restore it from a backup; deleting it starts with no durable exchanges, queues, "
            "bindings or users, and the journal's messages of unknown queues are then dropped",
        ) from e


def _version_of(data: bytes) -> int | None:
    try:
        version = json.loads(data).get("version")
    except (ValueError, AttributeError):
        return None
    return version if isinstance(version, int) else None


def save_topology(path: Path, topology: Topology) -> None:
    write_atomically(path, topology.to_json())
