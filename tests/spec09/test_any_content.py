"""Rule queue:any-content: contents of every class in one queue, queued and delivered
independently of each other."""

from __future__ import annotations

import pytest

from amqp_protocol.values import Content

from .flows import declare_queue, publish_file, receive_file, receive_transfer, transfer
from .peer import Peer


@pytest.mark.spec_rule("queue:any-content")
def test_each_content_class_is_delivered_to_its_own_consumers(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.send_content(1, "basic.publish", b"basic", exchange="", routing_key=name)
    publish_file(peer, 1, name, b"file", f"any-{name}")
    peer.send_content(1, "stream.publish", b"stream", exchange="", routing_key=name)
    transfer(peer, 1, name, b"message")
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 4
    peer.call(1, "stream.consume", queue=name)
    assert peer.expect(1, "stream.deliver").body == b"stream"
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    assert receive_transfer(peer, 1).body == Content(b"message")
    peer.call(1, "file.consume", queue=name, no_ack=True)
    assert receive_file(peer, 1)[1] == b"file"
    peer.send(1, "basic.get", queue=name, no_ack=True)
    assert peer.expect(1, "basic.get-ok").body == b"basic"
