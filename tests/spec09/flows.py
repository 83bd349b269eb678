"""Multi-step exchanges of the 0-9 classes, shared by the tests."""

from __future__ import annotations

from typing import Any

from amqp_protocol import SPEC_0_9, Spec

from .peer import Peer


def peer_on(url: str, spec: Spec = SPEC_0_9) -> Peer:
    """A new peer (0-9 by default) with channel 1 open."""
    peer = Peer(url, spec)
    peer.open_channel(1)
    return peer


def declare_internal_exchange(url: str, name: str) -> None:
    """A fanout exchange ``name`` declared internal, over 0-9 (the 0-10 draft's
    exchange.declare has no internal field)."""
    declarer = peer_on(url)
    try:
        declarer.call(1, "exchange.declare", exchange=name, type="fanout", internal=True)
    finally:
        declarer.close()


def declare_queue(peer: Peer, channel: int, queue: str, **fields: Any) -> str:
    return str(peer.call(channel, "queue.declare", queue=queue, **fields).queue)


def get_body(peer: Peer, channel: int, queue: str) -> bytes:
    """basic.get with no-ack of a message that must be there; its body."""
    peer.send(channel, "basic.get", queue=queue, no_ack=True)
    return bytes(peer.expect(channel, "basic.get-ok").body)


def stage_file(
    peer: Peer, channel: int, identifier: str, body: bytes, properties: dict[str, Any] | None = None
) -> int:
    """file.open + file.stage of ``body`` from the offset the server reports; returns it."""
    ok = peer.call(channel, "file.open", identifier=identifier, content_size=len(body))
    offset = int(ok.staged_size)
    peer.send_content(channel, "file.stage", body[offset:], properties)
    return offset


def publish_file(
    peer: Peer,
    channel: int,
    routing_key: str,
    body: bytes,
    identifier: str,
    exchange: str = "",
    properties: dict[str, Any] | None = None,
    **fields: Any,
) -> None:
    stage_file(peer, channel, identifier, body, properties)
    peer.send(
        channel,
        "file.publish",
        exchange=exchange,
        routing_key=routing_key,
        identifier=identifier,
        **fields,
    )


def receive_file(peer: Peer, channel: int, staged_size: int = 0) -> tuple[Any, bytes]:
    """Answer the server's file.open; returns (file.deliver, staged body)."""
    peer.expect(channel, "file.open")
    peer.send(channel, "file.open-ok", staged_size=staged_size)
    stage = peer.expect(channel, "file.stage")
    deliver = peer.expect(channel, "file.deliver").method
    return deliver, stage.body


def reject_a_file(peer: Peer, queue: str, requeue: bool) -> Any:
    """Publish a file to ``queue``, consume it on channel 1 and reject it; the deliver."""
    declare_queue(peer, 1, queue)
    publish_file(peer, 1, queue, b"file body", f"rej-{queue}")
    peer.call(1, "file.consume", queue=queue, consumer_tag="files")
    deliver, _ = receive_file(peer, 1)
    peer.send(1, "file.reject", delivery_tag=deliver.delivery_tag, requeue=requeue)
    return deliver


def transfer(peer: Peer, channel: int, routing_key: str, body: bytes, **fields: Any) -> Any:
    from amqp_protocol.values import Content

    return peer.call(
        channel,
        "message.transfer",
        destination="",
        routing_key=routing_key,
        body=Content(body),
        **fields,
    )


def transfer_by_reference(peer: Peer, channel: int, routing_key: str, reference: bytes) -> None:
    """message.transfer whose body is the open ``reference``: no reply until it closes."""
    from amqp_protocol.values import Content

    body = Content(reference, reference=True)
    peer.send(channel, "message.transfer", destination="", routing_key=routing_key, body=body)


def close_reference(peer: Peer, channel: int, reference: bytes, transfers: int = 1) -> None:
    """message.close: one message.ok for each transfer held on the reference, then the
    close's own."""
    peer.send(channel, "message.close", reference=reference)
    for _ in range(transfers + 1):
        peer.expect(channel, "message.ok")


def receive_transfer(peer: Peer, channel: int, answer: str = "message.ok") -> Any:
    """The server's next message.transfer, answered with ``answer``."""
    m = peer.expect(channel, "message.transfer").method
    peer.send(channel, answer, **({"code": 1, "text": "no"} if answer == "message.reject" else {}))
    return m
