"""Persistent test messages whose body says which queue and sequence number they carry."""

from __future__ import annotations

from amqp_protocol import SPEC_0_9_1
from broker.model.message import Message
from broker.store import Store, decode_message, encode_message

_Properties = SPEC_0_9_1.properties("basic")


def persistent(body: bytes) -> bytes:
    return encode_message(Message("amq.direct", "k", _Properties(delivery_mode=2), body))


def recovered_bodies(store: Store, queue_id: int) -> list[bytes]:
    return [decode_message(data).body for _, _, data in store.recovered_messages(queue_id)]
