"""Every stream-protocol command the connector and rstream use, answered with the same
response codes by the bundled broker and RabbitMQ 4."""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterator

import pytest

from testbed.raw_stream_client import OK, RawClient, string
from tests.stream_protocol.conftest import Endpoints

STREAM_DOES_NOT_EXIST = 2
SUBSCRIPTION_ID_ALREADY_EXISTS = 3
SUBSCRIPTION_ID_DOES_NOT_EXIST = 4
STREAM_ALREADY_EXISTS = 5
STREAM_NOT_AVAILABLE = 6
AUTHENTICATION_FAILURE = 8
VIRTUAL_HOST_ACCESS_FAILURE = 12
PRECONDITION_FAILED = 17
PUBLISHER_DOES_NOT_EXIST = 18
NO_OFFSET = 19


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client(endpoints: Endpoints) -> Iterator[RawClient]:
    with RawClient(endpoints.stream) as c:
        assert c.handshake() == OK
        yield c


@pytest.fixture
def stream(client: RawClient) -> Iterator[str]:
    name = _name("proto")
    assert client.create(name) == OK
    yield name
    client.delete(name)


def test_wrong_password_is_authentication_failure(endpoints: Endpoints) -> None:
    with RawClient(endpoints.stream) as c:
        assert c.handshake(password="not the password") == AUTHENTICATION_FAILURE


def test_unknown_virtual_host_is_access_failure(endpoints: Endpoints) -> None:
    with RawClient(endpoints.stream) as c:
        assert c.handshake(vhost="no-such-vhost") == VIRTUAL_HOST_ACCESS_FAILURE


def test_metadata_advertises_the_listener_and_says_which_streams_exist(
    client: RawClient, stream: str
) -> None:
    body = client.exchange(0x0F, struct.pack(">i", 2) + string(stream) + string("nope"))
    brokers = [(body.take(">H"), body.string(), body.take(">I")) for _ in range(body.take(">i"))]
    assert [port for _, _, port in brokers] == [client.port]
    answers = {}
    for _ in range(body.take(">i")):
        name, code = body.string(), body.take(">H")
        body.take(">H")  # the leader's reference
        replicas = body.take(">i")
        body.pos += 2 * replicas
        answers[name] = code
    assert answers == {stream: OK, "nope": STREAM_DOES_NOT_EXIST}


def test_create_and_delete_answer_existence(client: RawClient, stream: str) -> None:
    assert client.create(stream) == STREAM_ALREADY_EXISTS
    assert client.delete(_name("missing")) == STREAM_DOES_NOT_EXIST


def test_declare_publisher_refusals(client: RawClient, stream: str) -> None:
    assert client.declare_publisher(1, "", _name("missing")) == STREAM_DOES_NOT_EXIST
    assert client.declare_publisher(1, "", stream) == OK
    assert client.declare_publisher(1, "", stream) == PRECONDITION_FAILED
    code, _ = client.request(0x06, struct.pack(">B", 7))
    assert code == PUBLISHER_DOES_NOT_EXIST
    code, _ = client.request(0x06, struct.pack(">B", 1))
    assert code == OK


def _confirmed(client: RawClient, count: int) -> list[int]:
    """The next ``count`` publishing ids confirmed, in one or more PublishConfirm frames."""
    ids: list[int] = []
    while len(ids) < count:
        ids += client.confirmed()[1]
    return sorted(ids)


def test_deduplication_drops_ids_already_written_and_confirms_them(
    client: RawClient, stream: str
) -> None:
    assert client.declare_publisher(3, "dedup-ref", stream) == OK
    client.publish(3, [(1, b"a"), (2, b"b"), (3, b"c")])
    assert _confirmed(client, 3) == [1, 2, 3]
    client.publish(3, [(2, b"b again"), (3, b"c again"), (4, b"d")])
    assert _confirmed(client, 3) == [2, 3, 4]  # RabbitMQ: the dropped ones in a frame of their own
    assert client.publisher_sequence("dedup-ref", stream) == (OK, 4)
    assert client.publisher_sequence("never-published", stream) == (OK, 0)
    assert client.subscribe(1, stream, credit=10) == OK
    records: list[bytes] = []
    while len(records) < 4:
        records += client.delivered()[2]
    assert records == [b"a", b"b", b"c", b"d"]


def test_subscription_ids_are_checked(client: RawClient, stream: str) -> None:
    assert client.subscribe(1, _name("missing")) == STREAM_DOES_NOT_EXIST
    assert client.subscribe(1, stream) == OK
    assert client.subscribe(1, stream) == SUBSCRIPTION_ID_ALREADY_EXISTS
    assert client.request(0x0C, struct.pack(">B", 9))[0] == SUBSCRIPTION_ID_DOES_NOT_EXIST
    assert client.request(0x0C, struct.pack(">B", 1))[0] == OK


def test_credit_bounds_the_chunks_delivered(client: RawClient, stream: str) -> None:
    assert client.declare_publisher(1, "", stream) == OK
    for i in range(3):  # one Publish frame is one chunk on both brokers
        client.publish(1, [(i + 1, f"m{i}".encode())])
        client.confirmed()
    assert client.subscribe(1, stream, credit=1) == OK
    assert client.delivered()[2] == [b"m0"]
    client.send(0x09, struct.pack(">BH", 1, 2))
    assert client.delivered()[2] + client.delivered()[2] == [b"m1", b"m2"]


def test_stored_offsets_are_queried_back(client: RawClient, stream: str) -> None:
    code, _ = client.request(0x0B, string("reader") + string(stream))
    assert code == NO_OFFSET
    client.send(0x0A, string("reader") + string(stream) + struct.pack(">Q", 42))
    deadline = time.monotonic() + 5  # RabbitMQ stores offsets asynchronously
    while True:
        code, body = client.request(0x0B, string("reader") + string(stream))
        if code == OK or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert (code, body.take(">Q")) == (OK, 42)


def test_stream_stats_report_first_and_committed_chunk(client: RawClient, stream: str) -> None:
    assert client.declare_publisher(1, "", stream) == OK
    client.publish(1, [(1, b"x"), (2, b"y")])
    client.confirmed()
    code, stats = client.stream_stats(stream)
    assert code == OK
    assert stats["committed_chunk_id"] >= stats["first_chunk_id"] >= 0
    assert client.stream_stats(_name("missing"))[0] == STREAM_DOES_NOT_EXIST


def test_super_stream_partitions_and_routes(client: RawClient) -> None:
    name = _name("super")
    partitions = [f"{name}-{i}" for i in range(3)]
    payload = string(name) + struct.pack(">i", 3) + b"".join(string(p) for p in partitions)
    payload += struct.pack(">i", 3) + b"".join(string(k) for k in ("0", "1", "2"))
    payload += struct.pack(">i", 0)
    assert client.request(0x1D, payload)[0] == OK
    try:
        code, body = client.request(0x19, string(name))
        assert (code, body.strings()) == (OK, partitions)
        code, body = client.request(0x18, string("1") + string(name))
        assert (code, body.strings()) == (OK, [partitions[1]])
        code, body = client.request(0x18, string("nothing") + string(name))
        assert (code, body.strings()) == (OK, [])
        assert client.request(0x19, string(_name("missing")))[0] == STREAM_DOES_NOT_EXIST
    finally:
        assert client.request(0x1E, string(name))[0] == OK
    assert client.delete(partitions[0]) == STREAM_DOES_NOT_EXIST


def test_deleting_a_stream_tells_its_subscribers(endpoints: Endpoints, client: RawClient) -> None:
    name = _name("doomed")
    assert client.create(name) == OK
    assert client.subscribe(1, name) == OK
    with RawClient(endpoints.stream) as other:
        assert other.handshake() == OK
        assert other.delete(name) == OK
    update = client.wait(0x10)
    assert (update.body.take(">H"), update.body.string()) == (STREAM_NOT_AVAILABLE, name)


def _sent(client: RawClient) -> tuple[int, list[bytes]]:
    """The next Deliver's subscription and records (a chunk id may not start at 0)."""
    subscription, _first, records = client.delivered()
    return subscription, records


def test_filtered_subscription_skips_chunks_without_its_values(
    client: RawClient, stream: str
) -> None:
    assert client.declare_publisher(1, "", stream) == OK
    for publishing_id, value in enumerate(("blue", "red", "blue"), start=1):
        client.publish(1, [(publishing_id, value.encode())], filter_value=value)
        client.confirmed()  # one chunk each
    client.publish(1, [(4, b"plain")])
    client.confirmed()
    assert client.subscribe(1, stream, properties={"filter.0": "red"}) == OK
    assert client.delivered()[2] == [b"red"]
    assert (
        client.subscribe(2, stream, properties={"filter.0": "red", "match-unfiltered": "true"})
        == OK
    )
    assert client.delivered()[2] + client.delivered()[2] == [b"red", b"plain"]


def test_offset_specifications(client: RawClient, stream: str) -> None:
    assert client.declare_publisher(1, "", stream) == OK
    for publishing_id, body in enumerate((b"first chunk", b"last chunk"), start=1):
        client.publish(1, [(publishing_id, body)])
        client.confirmed()
    assert client.subscribe(1, stream, offset_type=2) == OK  # last: the last chunk
    assert _sent(client) == (1, [b"last chunk"])
    assert client.subscribe(2, stream, offset_type=4, offset=1) == OK  # its chunk from 1
    assert _sent(client) == (2, [b"last chunk"])
    assert client.subscribe(3, stream, offset_type=5, offset=0) == OK  # timestamp: all
    assert _sent(client) == (3, [b"first chunk"])
    assert client.subscribe(4, stream, offset_type=3) == OK  # next: what comes after
    client.publish(1, [(3, b"new")])
    seen: dict[int, list[bytes]] = {}
    while len(seen) < 4:
        subscription, records = _sent(client)
        seen.setdefault(subscription, records)
    assert seen[4] == [b"new"]
