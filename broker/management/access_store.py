"""Users, permissions and virtual hosts changed through the API are the configuration's
(``BrokerConfig.users``, ``topic_permissions``, ``vhosts``, which logins and connections
read); with a data directory they are also written to its topology, as the store keeps
those the configuration declares."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store.persistence import DurableStore
from ..store.topology import PermissionDef, TopicPermissionDef, UserDef

if TYPE_CHECKING:
    from .managed import ManagedBroker


def save_access(broker: ManagedBroker) -> None:
    """Write the configuration's users, permissions and vhosts over the stored ones."""
    store = broker.store
    if not isinstance(store, DurableStore):
        return
    config, t = broker.config, store.topology
    t.users = {
        u.name: UserDef(u.name, u.password_hash, tuple(u.tags)) for u in config.users.values()
    }
    t.permissions = {
        (u.name, vhost): PermissionDef(u.name, vhost, p.configure, p.write, p.read)
        for u in config.users.values()
        for vhost, p in u.permissions.items()
    }
    t.topic_permissions = {
        key: TopicPermissionDef(*key, p.write, p.read)
        for key, p in config.topic_permissions.items()
    }
    t.vhosts = set(config.vhosts)
    store.store.save_topology()
