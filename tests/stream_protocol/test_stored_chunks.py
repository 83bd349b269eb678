"""The bundled broker serves a stream's chunks as its log stores them (Osiris's layout):
a Deliver carries a stored chunk's header and data byte for byte, whichever protocol
published its messages, and a broker restarted on its data directory serves the existing
log over both protocols."""

from __future__ import annotations

from pathlib import Path

import pika

from amqp_protocol.stream.chunk import HEADER, parse_chunk_header
from broker import Broker
from testbed.raw_stream_client import OK, RawClient
from tests.stream_protocol.conftest import Endpoints
from tests.stream_protocol.test_across_protocols import consume_091

STREAM = "stored"


def _publish_091(url: str, bodies: list[bytes]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        properties = pika.BasicProperties(content_type="text/plain", headers={"h": "v"})
        for body in bodies:
            channel.basic_publish("", STREAM, body, properties)
    finally:
        connection.close()


def _publish_stream(client: RawClient, first_id: int, bodies: list[bytes], value: str) -> None:
    assert client.declare_publisher(1, "", STREAM) == OK
    messages = [(first_id + i, b"\x00Su\xa0" + bytes((len(b),)) + b) for i, b in enumerate(bodies)]
    client.publish(1, messages, filter_value=value)
    assert client.confirmed() == (1, [m[0] for m in messages])


def _stored_delivered_forms(data_dir: Path) -> list[bytes]:
    """Each stored chunk's header and data section: what a Deliver carries of it."""
    segment = data_dir / "streams" / "%2F" / STREAM / f"{0:020d}.segment"
    raw = segment.read_bytes()
    forms, pos = [], 8
    while pos < len(raw):
        header = parse_chunk_header(raw, pos)
        data = pos + HEADER.size + header.bloom_size
        forms.append(raw[pos : pos + HEADER.size] + raw[data : data + header.data_length])
        pos += header.stored_size
    return forms


def _delivered_chunks(client: RawClient, count: int) -> list[bytes]:
    """The chunk bytes of the next ``count`` Deliver frames (version 1)."""
    chunks = []
    for _ in range(count):
        body = client.wait(0x08).body
        chunks.append(bytes(body.data[body.pos + 1 :]))  # after the subscription id
    return chunks


def test_a_chunk_is_delivered_byte_for_byte_as_stored(tmp_path: Path) -> None:
    with Broker(data_dir=str(tmp_path)) as b, RawClient(b.stream_url) as c:
        assert c.handshake() == OK
        assert c.create(STREAM) == OK
        _publish_091(b.url, [b"zero", b"one"])
        _publish_stream(c, 1, [b"two", b"three"], "eu")  # a chunk with a bloom filter
        stored = _stored_delivered_forms(tmp_path)
        assert len(stored) >= 2
        assert c.subscribe(1, STREAM, credit=len(stored)) == OK
        assert _delivered_chunks(c, len(stored)) == stored


def test_a_restarted_broker_serves_the_existing_log_over_both_protocols(tmp_path: Path) -> None:
    with Broker(data_dir=str(tmp_path)) as b, RawClient(b.stream_url) as c:
        assert c.handshake() == OK
        assert c.create(STREAM) == OK
        _publish_091(b.url, [b"zero"])
        _publish_stream(c, 1, [b"one"], "eu")
    stored = _stored_delivered_forms(tmp_path)
    with Broker(data_dir=str(tmp_path)) as b, RawClient(b.stream_url) as c:
        assert c.handshake() == OK
        assert c.subscribe(1, STREAM, credit=len(stored)) == OK
        assert _delivered_chunks(c, len(stored)) == stored
        endpoints = Endpoints(b.url, b.stream_url)
        got = consume_091(endpoints, STREAM, 2)
        assert [body for _, body in got] == [b"zero", b"one"]
        assert got[0][0].headers["h"] == "v"
        assert [p.headers["x-stream-offset"] for p, _ in got] == [0, 1]
