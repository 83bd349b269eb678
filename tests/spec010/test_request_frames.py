"""The draft's request and response frames (types 9 and 10) against the broker: a method in a
frame-request is executed as in a method frame, its reply comes back in a frame-response
carrying the request's id, response ids counted per channel from 1 (broker/server/spec010/
requests.py; the layout is the protocol layer's, docs/protocol-0-10.md)."""

from __future__ import annotations

from amqp_protocol import events
from tests.spec09.peer import Peer


def _answer(peer: Peer, channel: int) -> tuple[int, int, str]:
    """(response-id, request-id, method name) of the next response on ``channel``."""
    response = peer.expect_response(channel)
    assert response.batch_offset == 0
    return response.response_id, response.request_id, response.received.method.NAME


def test_a_request_is_answered_by_a_response_carrying_its_id(peer: Peer, name: str) -> None:
    peer.request(1, "queue.declare", 7, queue=name)
    response = peer.expect_response(1)
    assert (response.response_id, response.request_id) == (1, 7)
    assert response.received.method.fields()["queue"] == name
    peer.request(1, "queue.purge", 8, queue=name)
    assert _answer(peer, 1) == (2, 8, "queue.purge-ok")


def test_response_ids_are_counted_per_channel(peer: Peer, name: str) -> None:
    peer.request(2, "channel.open", 1)
    assert _answer(peer, 2) == (1, 1, "channel.open-ok")
    peer.request(1, "queue.declare", 5, queue=name)
    assert _answer(peer, 1) == (1, 5, "queue.declare-ok")
    peer.request(2, "queue.declare", 2, queue=name, passive=True)
    assert _answer(peer, 2) == (2, 2, "queue.declare-ok")


def test_channel_open_and_close_in_requests_and_a_reopened_channel_counts_afresh(
    peer: Peer,
) -> None:
    peer.request(3, "channel.open", 1)
    assert _answer(peer, 3) == (1, 1, "channel.open-ok")
    peer.request(3, "channel.close", 2, reply_code=200, reply_text="", class_id=0, method_id=0)
    assert _answer(peer, 3) == (2, 2, "channel.close-ok")
    peer.request(3, "channel.open", 3)
    assert _answer(peer, 3) == (1, 3, "channel.open-ok")


def test_basic_get_in_a_request_is_answered_with_its_content(peer: Peer, name: str) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.request(1, "basic.publish", 1, body=b"by request", exchange="", routing_key=name)
    peer.request(1, "basic.get", 2, queue=name, no_ack=True)
    response = peer.expect_response(1)
    assert (response.response_id, response.request_id) == (1, 2)
    assert isinstance(response.received, events.ContentReceived)
    assert (response.received.method.NAME, response.received.body) == (
        "basic.get-ok",
        b"by request",
    )
    peer.request(1, "basic.get", 3, queue=name, no_ack=True)
    assert _answer(peer, 1) == (2, 3, "basic.get-empty")


def test_a_method_without_reply_is_answered_by_nothing_and_deliveries_stay_method_frames(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.request(1, "queue.bind", 1, queue=name, exchange="amq.fanout", routing_key="")
    peer.send_content(1, "basic.publish", b"fanned", exchange="amq.fanout", routing_key="")
    peer.request(1, "basic.consume", 2, queue=name, consumer_tag="c", no_ack=True)
    assert _answer(peer, 1) == (1, 2, "basic.consume-ok")  # none was used by queue.bind
    assert peer.expect(1, "basic.deliver").body == b"fanned"


def test_session_open_in_a_request_is_answered_by_session_attached(peer: Peer) -> None:
    peer.request(4, "session.open", 1, detached_lifetime=30)
    response = peer.expect_response(4)
    assert (response.response_id, response.request_id) == (1, 1)
    assert response.received.method.NAME == "session.attached"
    assert response.received.method.fields()["detached_lifetime"] == 30


def test_a_channel_exception_in_a_request_closes_the_channel_in_a_method_frame(
    peer: Peer, name: str
) -> None:
    peer.request(1, "queue.declare", 1, queue=name, passive=True)
    assert peer.channel_error(1) == 404


def test_a_response_frame_from_the_client_is_a_503(peer: Peer) -> None:
    peer.sock.sendall(peer.proto.send_response(1, peer.method("channel.flow-ok"), 1, 1))
    close = peer.expect(0, "connection.close").method
    assert close.reply_code == 503 and "frame-response" in close.reply_text


def test_a_request_on_a_channel_that_is_not_open_is_a_504(peer: Peer, name: str) -> None:
    peer.request(9, "queue.declare", 1, queue=name)
    assert peer.connection_error() == 504


def test_a_request_on_a_closed_channel_is_a_504(peer: Peer, name: str) -> None:
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    peer.request(1, "queue.declare", 1, queue=name)
    assert peer.connection_error() == 504


def _frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return (
        bytes([frame_type])
        + channel.to_bytes(2, "big")
        + len(payload).to_bytes(4, "big")
        + (payload + b"\xce")
    )


def test_a_request_frame_shorter_than_its_ids_is_a_502(peer: Peer) -> None:
    peer.sock.sendall(_frame(9, 1, b"\x00" * 19))
    assert peer.connection_error() == 502


def test_a_request_frame_with_its_method_cut_short_is_a_502(peer: Peer) -> None:
    whole = peer.proto.send_request(1, peer.method("queue.declare", queue="q"), 1)
    payload = whole[7:-1]
    peer.sock.sendall(_frame(9, 1, payload[:-3]))
    assert peer.connection_error() == 502


def test_content_after_a_request_of_a_method_without_content_is_a_503(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.request(1, "queue.purge", 1, queue=name)
    publish = peer.method("basic.publish", routing_key=name)
    properties = peer.spec.properties("basic")()
    peer.sock.sendall(peer.proto.content_frames(1, publish, properties, b"x"))
    assert peer.connection_error() == 503
