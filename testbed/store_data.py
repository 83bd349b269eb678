"""A store's data directory made by hand: durable queues declared, a journal written without a
broker, persistent messages whose body says which queue and sequence number they carry."""

from __future__ import annotations

from pathlib import Path

from amqp_protocol import SPEC_0_9_1
from broker.model.message import Message
from broker.store import QueueDef, Store, decode_message, encode_message
from broker.store.records import (
    BASIC_CLASS,
    JournaledMessage,
    ack_record,
    publish_record,
    segment_header,
)
from broker.store.recovery import segment_path

_Properties = SPEC_0_9_1.properties("basic")

PER_SEGMENT = 100_000


def persistent(body: bytes) -> bytes:
    return encode_message(Message("amq.direct", "k", _Properties(delivery_mode=2), body))


def recovered_bodies(store: Store, queue_id: int) -> list[bytes]:
    return [decode_message(data).body for _, _, data in store.recovered_messages(queue_id)]


def declare_queues(data_dir: Path, names: list[str]) -> dict[str, int]:
    """Open the store, declare durable queues ``names`` and close it; returns their ids."""
    store = Store.open(data_dir)
    try:
        ids = {}
        for name in names:
            queue_id = store.topology.allocate_queue_id()
            store.topology.queues[("/", name)] = QueueDef("/", name, queue_id)
            ids[name] = queue_id
        store.save_topology()
        return ids
    finally:
        store.close()


def write_journal(data_dir: Path, queue_ids: list[int], messages: int) -> None:
    """Segments holding ``messages`` 100-byte messages round-robin over ``queue_ids``, the first
    tenth of them acked: what a broker would have written, without its overhead."""
    message = JournaledMessage(BASIC_CLASS, persistent(b"m" * 100))
    acked: dict[int, list[int]] = {q: [] for q in queue_ids}
    for i in range(1, messages // 10 + 1):
        acked[queue_of(i, queue_ids)].append(i)
    for segment, first in enumerate(range(0, messages, PER_SEGMENT), start=1):
        ids = range(first + 1, min(first + PER_SEGMENT, messages) + 1)
        parts = [segment_header(segment)]
        parts += [publish_record(i, [queue_of(i, queue_ids)], message) for i in ids]
        if first == 0:
            parts += [ack_record(q, acked_ids) for q, acked_ids in acked.items()]
        segment_path(data_dir / "journal", segment).write_bytes(b"".join(parts))


def queue_of(msg_id: int, queue_ids: list[int]) -> int:
    """The queue ``write_journal`` routes message ``msg_id`` to."""
    return queue_ids[msg_id % len(queue_ids)]
