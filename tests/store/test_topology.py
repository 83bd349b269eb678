"""Durable definitions survive a restart exactly, field-table arguments included."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

from broker.store import (
    BindingDef,
    ExchangeDef,
    PermissionDef,
    QueueDef,
    Store,
    Topology,
    UserDef,
)


def test_definitions_survive_a_restart(data_dir: Path) -> None:
    arguments = {
        "x-max-length": 10,
        "bin": b"\x00\xff",
        "d": decimal.Decimal("1.5"),
        "t": datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc),
        "n": {"a": [1, "two", None, True]},
    }
    store = Store.open(data_dir)
    t = store.topology
    t.vhosts |= {"/", "staging"}
    t.users["app"] = UserDef("app", "aGFzaA==", ("administrator",))
    t.permissions[("app", "staging")] = PermissionDef("app", "staging", "^q", ".*", "")
    t.exchanges[("staging", "ex")] = ExchangeDef("staging", "ex", "topic", False, True, arguments)
    t.queues[("staging", "q")] = QueueDef("staging", "q", t.allocate_queue_id(), False, arguments)
    t.bindings.append(BindingDef("staging", "ex", "q", "queue", "a.#", arguments))
    store.save_topology()
    saved = Topology.from_json(t.to_json())
    store.close()

    store = Store.open(data_dir)
    try:
        assert store.topology == saved == t
        assert store.topology.allocate_queue_id() == 2
    finally:
        store.close()


def test_the_file_is_replaced_atomically(data_dir: Path) -> None:
    store = Store.open(data_dir)
    try:
        store.topology.vhosts.add("/")
        store.save_topology()
        assert sorted(p.name for p in data_dir.iterdir() if "topology" in p.name) == [
            "topology.json"
        ]
    finally:
        store.close()
