"""Spilled queue entries come back as they went: basic messages with their journal id, flags,
delivery count, expiry and BCC keys, and messages of the 0-9 classes of their class (rule
message:04 needs the message class), with their priority and properties."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from amqp_protocol import SPEC_0_9, SPEC_0_9_1
from broker.model.message import Message, QueuedMessage
from broker.server.spec09.class_message import ClassMessage
from broker.server.spec09.lanes import register_contents
from broker.store import SpillFifo
from broker.store.spilled_entries import SpilledEntries


def _round_trip(tmp_path: Path, entry: QueuedMessage) -> QueuedMessage:
    register_contents()  # as the server does: the 0-9 classes' codecs
    spilled = SpilledEntries(SpillFifo(tmp_path))
    try:
        spilled.push(entry)
        assert len(spilled) == 1
        return spilled.pop()
    finally:
        spilled.close()


def test_a_basic_entry_keeps_its_journal_id_flags_delivery_count_expiry_and_bcc_keys(
    tmp_path: Path,
) -> None:
    properties = SPEC_0_9_1.properties("basic")(priority=3, headers={"CC": ["c"]})
    message = Message("ex", "key", properties, b"body", blind_keys=("b1", "b2"))
    message.msg_id = 42
    entry = QueuedMessage(message, 1234.5)
    entry.redelivered = True
    entry.delivery_count = 7
    back = _round_trip(tmp_path, entry)
    assert (back.expires_at, back.redelivered, back.size) == (1234.5, True, 4)
    assert back.delivery_count == 7
    got = back.message
    assert (got.class_id, got.msg_id, got.blind_keys) == (60, 42, ("b1", "b2"))
    assert (got.exchange, got.routing_key, got.body, got.priority) == ("ex", "key", b"body", 3)
    assert got.headers == {"CC": ["c"]}


@pytest.mark.parametrize(
    ("content_class", "class_id", "properties"),
    [
        ("file", 70, SPEC_0_9.properties("file")(content_type="text/plain", priority=4)),
        ("stream", 80, SPEC_0_9.properties("stream")(content_type="text/plain", priority=4)),
        ("message", 120, {"message_id": "m-1", "priority": 4, "delivery_mode": 1}),
    ],
)
def test_a_0_9_class_entry_comes_back_of_its_class(
    tmp_path: Path, content_class: str, class_id: int, properties: Any
) -> None:
    message = ClassMessage(
        content_class, "ex", "key", properties, b"body", priority=4, identifier="f-1"
    )
    back = _round_trip(tmp_path, QueuedMessage(message, None))
    assert back.expires_at is None
    got = back.message
    assert isinstance(got, ClassMessage)
    assert (got.content_class, got.class_id, got.priority) == (content_class, class_id, 4)
    assert (got.exchange, got.routing_key, got.body, got.identifier) == (
        "ex",
        "key",
        b"body",
        "f-1",
    )
    assert got.properties == properties
