"""Policies, operator policies and vhost limits survive a restart, as RabbitMQ's do: with a
data directory they are written to its ``policies.json`` whenever one changes (atomically)
and read back when the management listener starts, which applies them to the queues and
exchanges the store recovered. Without a data directory (``Broker()`` in memory) nothing is
kept, as nothing else is.

Kept apart from the store's topology file because the management plane is what changes
them (the broker without its listener has no way to set one)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.policies import PolicyError, parse_policy
from ..store.files import write_atomically

if TYPE_CHECKING:
    from .managed import ManagedBroker

log = logging.getLogger("broker.management")

FILE_NAME = "policies.json"


def _path(broker: ManagedBroker) -> Path | None:
    data_dir = broker.config.data_dir
    return Path(data_dir) / FILE_NAME if data_dir else None


def save_policies(broker: ManagedBroker) -> None:
    """Write every vhost's policies, operator policies and limits over the kept ones."""
    path = _path(broker)
    if path is None:
        return
    doc = {
        name: {
            "policies": [p.as_json(False) for p in v.policies.policies.values()],
            "operator_policies": [p.as_json(False) for p in v.policies.operator_policies.values()],
            "limits": dict(v.limits),
        }
        for name, v in broker.vhosts.items()
        if v.policies or v.limits
    }
    write_atomically(path, json.dumps(doc, indent=1).encode())


def load_policies(broker: ManagedBroker) -> None:
    """Set the kept ones again, in the order they were set (a vhost gone since is skipped;
    a file that cannot be read is logged and left as it is)."""
    path = _path(broker)
    if path is None or not path.exists():
        return
    try:
        doc: dict[str, Any] = json.loads(path.read_bytes())
        for name, kept in doc.items():
            vhost = broker.vhosts.get(name)
            if vhost is None:
                continue
            vhost.limits.update(kept.get("limits", {}))
            for key, operator in (("policies", False), ("operator_policies", True)):
                for body in kept.get(key, []):
                    vhost.set_policy(parse_policy(name, body["name"], body, operator), operator)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, PolicyError) as e:
        log.error("policies in %s not restored: %s", path, e)
