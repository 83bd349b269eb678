"""The broker's fast-path basic.deliver frames (``frames.deliver_frames`` from a message's
pre-encoded pieces) are the bytes the protocol layer's ``send_content`` gives for the same
delivery, and their reported size is exact."""

from __future__ import annotations

from typing import Any

import pytest

from amqp_protocol import SPEC_0_9_1, Connection
from amqp_protocol.frames import deliver_frames
from amqp_protocol.values import encode_shortstr
from broker.model.message import Message

FRAME_MAX = 4096
Properties = SPEC_0_9_1.properties("basic")


@pytest.mark.parametrize("body_size", [0, 1, FRAME_MAX - 8, FRAME_MAX - 7, 5 * FRAME_MAX])
@pytest.mark.parametrize("properties", [{}, {"content_type": "t", "headers": {"k": 1}}])
@pytest.mark.parametrize("redelivered", [False, True])
def test_deliver_frames_match_send_content(
    body_size: int, properties: dict[str, Any], redelivered: bool
) -> None:
    body = bytes(range(256)) * (body_size // 256) + b"b" * (body_size % 256)
    message = Message("ex", "rk", Properties(**properties), body)
    out: list[bytes] = []
    size = deliver_frames(
        out,
        3,
        encode_shortstr("ctag"),
        42,
        redelivered,
        message.envelope,
        message.header_payload,
        message.body,
        FRAME_MAX,
    )
    reference = Connection(role="server", spec=SPEC_0_9_1)
    reference.frame_max = FRAME_MAX
    deliver = SPEC_0_9_1.method("basic.deliver")(
        consumer_tag="ctag",
        delivery_tag=42,
        redelivered=redelivered,
        exchange="ex",
        routing_key="rk",
    )
    expected = reference.send_content(3, deliver, Properties(**properties), body)
    assert b"".join(out) == expected
    assert size == len(expected)
