"""The bundled broker's stream listener: deduplication and stored offsets across a restart
with a data directory, bad frames closing only their connection, permissions as on 0-9-1,
the listener's port plumbing."""

from __future__ import annotations

import base64
import json
import struct
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pika
import pytest

from broker import Broker
from broker.cli import parse_args
from broker.config import BrokerConfig
from broker.stream_server.listener import StreamPortError
from testbed.raw_stream_client import OK, RawClient, string
from tests.stream_protocol.conftest import Endpoints

ACCESS_REFUSED = 16
UNKNOWN_FRAME = 13
FRAME_TOO_LARGE = 14
PRECONDITION_FAILED = 17


def _opened(uri: str) -> RawClient:
    client = RawClient(uri)
    assert client.handshake() == OK
    return client


def test_deduplication_and_offsets_survive_a_restart(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    with Broker(data_dir=data_dir) as b, _opened(b.stream_url) as c:
        assert c.create("kept") == OK
        assert c.declare_publisher(1, "writer", "kept") == OK
        c.publish(1, [(1, b"one"), (2, b"two")])
        assert c.confirmed() == (1, [1, 2])
        c.send(0x0A, string("reader") + string("kept") + struct.pack(">Q", 1))
        assert c.request(0x0B, string("reader") + string("kept"))[0] == OK
    with Broker(data_dir=data_dir) as b, _opened(b.stream_url) as c:
        assert c.publisher_sequence("writer", "kept") == (OK, 2)
        code, body = c.request(0x0B, string("reader") + string("kept"))
        assert (code, body.take(">Q")) == (OK, 1)
        assert c.declare_publisher(1, "writer", "kept") == OK
        c.publish(1, [(2, b"two again"), (3, b"three")])
        assert c.confirmed() == (1, [2, 3])
        assert c.subscribe(1, "kept") == OK
        records: list[bytes] = []
        while len(records) < 3:
            records += c.delivered()[2]
        assert records == [b"one", b"two", b"three"]


def test_unknown_command_closes_that_connection_alone(bundled_endpoints: Endpoints) -> None:
    with _opened(bundled_endpoints.stream) as bad, _opened(bundled_endpoints.stream) as good:
        bad.send(0x7777, b"")
        code, reason = bad.closed_with()
        assert code == UNKNOWN_FRAME and "0x7777" in reason
        assert bad.read_frame() is None  # then the socket
        assert good.create("still-serving") == OK
        assert good.delete("still-serving") == OK


def test_truncated_command_is_an_unknown_frame(bundled_endpoints: Endpoints) -> None:
    with _opened(bundled_endpoints.stream) as c:
        c.send(0x0D, struct.pack(">I", 1) + struct.pack(">h", 40) + b"short")
        assert c.closed_with()[0] == UNKNOWN_FRAME


def test_frame_over_the_limit_is_refused_before_it_is_read(
    bundled_endpoints: Endpoints,
) -> None:
    with RawClient(bundled_endpoints.stream) as c:
        c.sock.sendall(struct.pack(">I", 64 << 20) + b"\0\x11\0\x01")
        assert c.closed_with()[0] == FRAME_TOO_LARGE


def test_commands_before_open_are_refused(bundled_endpoints: Endpoints) -> None:
    with RawClient(bundled_endpoints.stream) as c:
        c.send(0x0D, struct.pack(">I", 1) + string("sneaky") + struct.pack(">i", 0))
        code, reason = c.closed_with()
        assert code == PRECONDITION_FAILED and "Create" in reason


def test_permissions_apply_as_on_091() -> None:
    config = {
        "users": {
            "guest": {"password": "guest"},
            "reader": {
                "password": "pw",
                "permissions": {"/": {"configure": "^$", "write": "^$", "read": ".*"}},
            },
        }
    }
    with Broker(config=config) as b:
        with _opened(b.stream_url) as admin:
            assert admin.create("guarded") == OK
        uri = f"rabbitmq-stream://reader:pw@127.0.0.1:{b.stream_port}/%2F"
        with _opened(uri) as c:
            assert c.create("mine") == ACCESS_REFUSED
            assert c.delete("guarded") == ACCESS_REFUSED
            assert c.declare_publisher(1, "", "guarded") == ACCESS_REFUSED
            assert c.subscribe(1, "guarded") == OK


def test_stream_port_option_and_no_listener() -> None:
    assert parse_args(["--stream-port", "0"]).stream_port == 0
    with Broker(stream_port=None) as b, pytest.raises(RuntimeError, match="no stream protocol"):
        _ = b.stream_port


def test_a_taken_stream_port_is_a_clear_error(bundled_endpoints: Endpoints) -> None:
    taken = urllib.parse.urlsplit(bundled_endpoints.stream).port
    broker = Broker(stream_port=taken)
    with pytest.raises(StreamPortError, match=f"stream protocol on 127.0.0.1:{taken}"):
        broker.start()


def test_management_overview_lists_the_stream_listener() -> None:
    with Broker() as b:
        request = urllib.request.Request(b.management_url + "api/overview")
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        with urllib.request.urlopen(request, timeout=10) as response:
            overview = json.load(response)
        port = b.stream_port
    listeners = {entry["protocol"]: entry["port"] for entry in overview["listeners"]}
    assert listeners["stream"] == port


def test_configuration_file_stream_ports() -> None:
    assert BrokerConfig.from_dict({}).stream_port == 5552
    assert BrokerConfig.from_dict({"stream_port": 0}).stream_port is None
    tls = {"certfile": "c.pem", "keyfile": "k.pem", "stream_port": 5551}
    config = BrokerConfig.from_dict({"tls": tls})
    assert config.tls is not None and config.tls.stream_port == 5551


def _message_count(amqp_url: str, queue: str) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        declared = connection.channel().queue_declare(queue, passive=True)
        return int(declared.method.message_count)
    finally:
        connection.close()


def test_a_reader_that_does_not_keep_up_holds_its_connection_back() -> None:
    """A subscriber that stops reading fills the socket: the server stops delivering and
    stops reading that connection (its publishes wait) instead of buffering the stream."""
    with Broker(config={"write_buffer_high": 16_384}) as b:
        with _opened(b.stream_url) as writer:
            assert writer.create("big") == OK
            assert writer.create("side") == OK
            assert writer.declare_publisher(1, "", "big") == OK
            for frame in range(100):  # 10 MB in 100 chunks: more than socket buffers hold
                writer.publish(1, [(frame * 100 + i, b"x" * 1000) for i in range(100)])
                writer.confirmed()
        with RawClient(b.stream_url) as reader:
            assert reader.handshake() == OK
            assert reader.declare_publisher(2, "", "side") == OK
            assert reader.subscribe(1, "big", credit=1000) == OK
            time.sleep(0.5)  # deliveries fill the socket; the reader reads nothing
            reader.publish(2, [(1, b"waits")])
            time.sleep(0.5)
            assert _message_count(b.url, "side") == 0
            records = 0
            while records < 10_000:  # reading lets the server go on, publish included
                records += len(reader.delivered()[2])
            assert reader.confirmed() == (2, [1])
            assert _message_count(b.url, "side") == 1


def test_a_command_after_chunks_that_wait_for_the_socket_is_answered_after_them() -> None:
    """As on RabbitMQ, whose connection sends a subscription's chunks before it reads the
    next command: a StreamStats sent together with a filtered Subscribe is answered after
    every chunk of that subscription's credit, however long they wait for a full socket (a
    filtered range reader relies on it to know the broker passed over the rest)."""
    with Broker(config={"write_buffer_high": 16_384}) as b:
        with _opened(b.stream_url) as writer:
            assert writer.create("big") == OK
            assert writer.declare_publisher(1, "", "big") == OK
            for batch in range(100):  # 10 MB in 100 chunks: more than socket buffers hold
                messages = [(batch * 100 + i, b"x" * 1000) for i in range(100)]
                writer.publish(1, messages, filter_value="eu" if batch % 2 else "us")
                writer.confirmed()
        with _opened(b.stream_url) as reader:
            subscribe = struct.pack(">IB", 91, 1) + string("big") + struct.pack(">HH", 1, 1000)
            subscribe += struct.pack(">i", 1) + string("filter.0") + string("eu")
            stats = struct.pack(">I", 92) + string("big")
            one_write = b"".join(
                struct.pack(">IHH", 4 + len(payload), key, 1) + payload
                for key, payload in ((0x07, subscribe), (0x1C, stats))
            )
            reader.sock.sendall(one_write)
            time.sleep(0.5)  # the chunks fill the socket; the reader reads nothing
            keys: list[int] = []
            while not keys or keys[-1] != 0x801C:
                frame = reader.read_frame()
                assert frame is not None
                keys.append(frame.key)
            assert keys == [0x8007] + [0x08] * 50 + [0x801C]


def test_a_resource_alarm_holds_stream_publishers_back() -> None:
    """As RabbitMQ blocks them: a connection with publishers is not read while the memory
    watermark is crossed, and goes on when it clears."""
    with Broker(config={"memory_high_watermark": 10_000}) as b:
        hoarder = pika.BlockingConnection(pika.URLParameters(b.url))
        channel = hoarder.channel()
        channel.queue_declare("hoard")
        for _ in range(3):  # 15,000 bytes queued: over the watermark (blocks this connection)
            channel.basic_publish("", "hoard", b"x" * 5_000)
        with _opened(b.stream_url) as c:
            assert c.create("held") == OK
            assert c.declare_publisher(1, "", "held") == OK
            c.publish(1, [(1, b"waits")])
            time.sleep(0.3)
            assert _message_count(b.url, "held") == 0
            connection = pika.BlockingConnection(pika.URLParameters(b.url))
            connection.channel().queue_purge("hoard")
            connection.close()
            assert c.confirmed() == (1, [1])
        hoarder.close()
        assert _message_count(b.url, "held") == 1
