"""consume then cancel, for each content class: after cancel-ok (message.ok for the
message class) nothing more is delivered to the consumer and new content stays queued."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .flows import declare_queue, publish_file, transfer
from .peer import Peer


def _publish_basic(peer: Peer, queue: str) -> None:
    peer.send_content(1, "basic.publish", b"after", exchange="", routing_key=queue)


def _publish_file(peer: Peer, queue: str) -> None:
    publish_file(peer, 1, queue, b"after", f"cancel-{queue}")


def _publish_stream(peer: Peer, queue: str) -> None:
    peer.send_content(1, "stream.publish", b"after", exchange="", routing_key=queue)


def _publish_message(peer: Peer, queue: str) -> None:
    transfer(peer, 1, queue, b"after")


#: content class -> (publish one to the queue, the method that starts a delivery)
CLASSES: dict[str, tuple[Callable[[Peer, str], None], str]] = {
    "basic": (_publish_basic, "basic.deliver"),
    "file": (_publish_file, "file.open"),
    "stream": (_publish_stream, "stream.deliver"),
    "message": (_publish_message, "message.transfer"),
}


@pytest.mark.parametrize("content_class", CLASSES)
def test_a_cancelled_consumer_gets_nothing_more(peer: Peer, name: str, content_class: str) -> None:
    publish, delivery = CLASSES[content_class]
    declare_queue(peer, 1, name)
    if content_class == "message":
        peer.call(1, "message.consume", queue=name, destination="c")
        assert peer.call(1, "message.cancel", destination="c").NAME == "message.ok"
    else:
        peer.call(1, f"{content_class}.consume", queue=name, consumer_tag="c")
        ok = peer.call(1, f"{content_class}.cancel", consumer_tag="c")
        assert ok.consumer_tag == "c"
    publish(peer, name)
    peer.nothing(1, delivery)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 1
