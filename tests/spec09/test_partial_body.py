"""``Connection.partial_body``: the body octets of a content still arriving on a channel
(what the broker keeps of a 0-9 file.stage cut by a closing channel)."""

from __future__ import annotations

import random

from amqp_protocol import SPEC_0_9, Connection, events


def _server_and_content_frames(body: bytes) -> tuple[Connection, bytes]:
    client, server = Connection("client", SPEC_0_9), Connection("server", SPEC_0_9)
    server.receive_data(client.initiate())
    client.frame_max = server.frame_max = 4096
    server.receive_data(client.send_method(1, SPEC_0_9.method("channel.open")()))
    stage = SPEC_0_9.method("file.stage")()
    return server, client.send_content(1, stage, SPEC_0_9.properties("file")(), body)


def test_partial_body_holds_the_body_frames_received_so_far() -> None:
    body = random.Random(9).randbytes(10240)  # three body frames of at most 4088 octets
    server, data = _server_and_content_frames(body)
    cut = data.index(body[4088:4100])  # the start of the second body frame's payload
    assert server.receive_data(data[: cut - 7]) == []
    assert server.partial_body(1) == body[:4088]
    assert server.partial_body(2) == b""


def test_partial_body_is_empty_once_the_content_is_complete() -> None:
    server, data = _server_and_content_frames(b"whole")
    (event,) = server.receive_data(data)
    assert isinstance(event, events.ContentReceived) and event.body == b"whole"
    assert server.partial_body(1) == b""
