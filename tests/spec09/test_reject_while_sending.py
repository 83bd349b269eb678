"""Rule basic.reject:01: the server reads and processes a reject while it is still sending
the rejected content, and cancels the rest of it with a body frame of size 1 (no data, only
the frame-end octet); the client drops a content cancelled that way."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_9, Connection
from amqp_protocol.events import ContentReceived
from amqp_protocol.frames import FRAME_HEADER
from amqp_spark.client import connect
from broker import Broker
from broker.server.content_pump import ContentPump

from .peer import Peer

RULE = "basic.reject:01"
BODY_SIZE = 24 << 20  # far more than the socket buffers hold while the consumer does not read
#: The consumer's SO_RCVBUF: fixed, so that the kernel's autotuning cannot open its window to
#: the whole content before the reject is sent (tcp_rmem allows up to 32 MiB).
RECEIVE_BUFFER = 64 * 1024
CANCEL_FRAME = FRAME_HEADER.pack(3, 1, 0) + b"\xce"


@pytest.mark.spec_rule(RULE)
def test_a_reject_during_a_backed_up_delivery_cancels_the_rest_of_its_content(
    broker_with: Callable[..., Broker],
) -> None:
    broker = broker_with(write_buffer_high=64 * 1024, max_message_size=BODY_SIZE + 1)
    with connect(broker.url) as conn, conn.channel() as ch:
        ch.queue_declare("large")
        ch.confirm_select()
        ch.basic_publish("", "large", b"\x01" * BODY_SIZE)
        ch.wait_for_confirms()
    peer = Peer(broker.url, receive_buffer=RECEIVE_BUFFER)
    try:
        peer.open_channel(1)
        peer.call(1, "basic.consume", queue="large", consumer_tag="c")
        # The delivery (tag 1) is on its way; its content cannot all fit in the buffers, so
        # the broker is still sending it when the reject arrives.
        peer.send(1, "basic.reject", delivery_tag=1, requeue=False)
        # Reading from here on lets the broker send on: it must still read the reject
        # before the content is out. Replies come after the cancel frame: had the content
        # been sent whole, its delivery would be among the events read until then.
        assert peer.call(1, "queue.declare", queue="large", passive=True).message_count == 0
        assert not [e for e in peer.pending if isinstance(e, ContentReceived)]
        assert peer.proto.partial_body(1) == b""
        peer.call(1, "basic.cancel", consumer_tag="c")
    finally:
        peer.close()


def _client_and_delivery_frames(body: bytes) -> tuple[Connection, bytes, bytes]:
    """A 0-9 client with channel 1 open, and one basic.deliver of ``body`` encoded by a
    server with frame-max 4096: (client, method and header frames, body frames)."""
    client, server = Connection("client", SPEC_0_9), Connection("server", SPEC_0_9)
    server.receive_data(client.initiate())
    client.frame_max = server.frame_max = 4096
    server.receive_data(client.send_method(1, SPEC_0_9.method("channel.open")()))
    deliver = SPEC_0_9.method("basic.deliver")(
        consumer_tag="c", delivery_tag=1, redelivered=False, exchange="", routing_key="q"
    )
    data = server.send_content(1, deliver, SPEC_0_9.properties("basic")(), body)
    body_start = data.index(FRAME_HEADER.pack(3, 1, 4088))
    return client, data[:body_start], data[body_start:]


@pytest.mark.spec_rule(RULE)
def test_the_client_drops_a_content_cancelled_by_an_empty_body_frame() -> None:
    client, head, body_frames = _client_and_delivery_frames(b"a" * 10000)
    first_frame = body_frames[: 4088 + 8]
    _, next_head, next_body = _client_and_delivery_frames(b"b" * 10000)
    events = client.receive_data(head + first_frame + CANCEL_FRAME + next_head + next_body)
    (event,) = events
    assert isinstance(event, ContentReceived) and event.body == b"b" * 10000


@pytest.mark.spec_rule(RULE)
def test_the_pump_sends_a_piece_at_a_time_so_a_reject_read_in_between_cancels_the_rest() -> None:
    """A consumer that keeps reading never pauses the transport: the broker reads a reject
    between two pieces of the content, not once it is all sent."""
    body_size = 1 << 20
    client, head, body_frames = _client_and_delivery_frames(b"a" * body_size)
    pump = ContentPump()
    pump.hold_content(head + body_frames, 1, 1, body_size, frame_max=4096)
    written: list[bytes] = []
    pump.drain(written.append, paused=lambda: False)
    assert pump.holding
    assert pump.cancel(1, 1)
    pump.drain(written.append, paused=lambda: False)
    assert not pump.holding
    sent = b"".join(written)
    assert sent.endswith(CANCEL_FRAME) and len(sent) < len(head) + len(body_frames)
    assert client.receive_data(sent) == [] and client.partial_body(1) == b""
