"""A body over max_body_size is skipped without buffering, and the stream stays in sync."""

from __future__ import annotations

from amqp_protocol import SPEC_0_9_1, Connection, events

PUBLISH = SPEC_0_9_1.method("basic.publish")
PROPS = SPEC_0_9_1.properties("basic")


def _open_pair(limit: int) -> tuple[Connection, Connection]:
    server = Connection("server", max_body_size=limit)
    client = Connection("client", SPEC_0_9_1)
    server.receive_data(client.initiate())
    server.receive_data(client.send_method(1, SPEC_0_9_1.method("channel.open")()))
    return server, client


def test_oversized_body_is_reported_once_and_the_next_message_still_arrives() -> None:
    server, client = _open_pair(limit=1000)
    big = client.send_content(1, PUBLISH(routing_key="q"), PROPS(), b"x" * 300_000)
    small = client.send_content(1, PUBLISH(routing_key="q"), PROPS(), b"ok")
    received = []
    data = big + small
    for start in range(0, len(data), 7000):  # arbitrary chunking across frames
        received += server.receive_data(data[start : start + 7000])
    too_large = [e for e in received if isinstance(e, events.ContentTooLarge)]
    contents = [e for e in received if isinstance(e, events.ContentReceived)]
    assert [(e.channel, e.size, e.limit) for e in too_large] == [(1, 300_000, 1000)]
    assert [e.body for e in contents] == [b"ok"]
    assert not server._partials  # nothing of the big body is held


def test_body_at_the_limit_is_delivered() -> None:
    server, client = _open_pair(limit=1000)
    evs = server.receive_data(client.send_content(1, PUBLISH(), PROPS(), b"y" * 1000))
    assert [type(e) for e in evs] == [events.ContentReceived]
