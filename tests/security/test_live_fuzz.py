"""Fuzzing the live broker: valid frame sequences, mutated (bit flips, inserted, deleted and
truncated bytes) and split at random points, and plain random bytes, sent before and after
the handshake. Whatever arrives, the broker logs no internal error, keeps serving a canary
connection after every case, drops every fuzzed connection once its peer goes, and its heap
(traced) does not grow with more fuzzed connections.

CI runs ``AMQP_SPARK_FUZZ_EXAMPLES`` cases per test (default 150); the long run is
``AMQP_SPARK_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/security/test_live_fuzz.py``.
"""

from __future__ import annotations

import gc
import logging
import os
import random
import socket
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqp_protocol import SPEC_0_9_1, Connection
from broker import Broker
from testbed.raw_client import M, open_raw, read_until_quiet

#: Fuzzed connections after which the broker's heap is compared, and the growth allowed
#: (a queue or exchange a mutated declaration creates stays, a few hundred bytes each).
HEAP_CASES = 300
HEAP_GROWTH_LIMIT = 64 << 10
TRACE_FRAMES = 30
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("AMQP_SPARK_FUZZ_EXAMPLES", "150"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _corpus() -> list[bytes]:
    """Valid frames of a busy session, encoded by the protocol layer."""
    conn = Connection(role="client", spec=SPEC_0_9_1)
    conn.initiate()
    props = SPEC_0_9_1.properties("basic")(
        content_type="text/plain", headers={"a": 1, "b": [1.5, "x"], "c": {"d": None}}
    )
    frames = [
        conn.send_method(1, M("channel.open")()),
        conn.send_method(1, M("basic.qos")(prefetch_count=5)),
        conn.send_method(1, M("confirm.select")()),
        conn.send_method(
            1, M("exchange.declare")(exchange="fz-x", type="topic", arguments={"x": 1})
        ),
        conn.send_method(1, M("queue.declare")(queue="fz-q", arguments={"x-max-length": 10})),
        conn.send_method(1, M("queue.bind")(queue="fz-q", exchange="fz-x", routing_key="#")),
        conn.send_content(
            1, M("basic.publish")(exchange="fz-x", routing_key="k"), props, b"b" * 40
        ),
        conn.send_method(1, M("basic.consume")(queue="fz-q", consumer_tag="c")),
        conn.send_method(1, M("basic.ack")(delivery_tag=1, multiple=True)),
        conn.send_method(1, M("basic.get")(queue="fz-q")),
        conn.send_method(1, M("queue.purge")(queue="fz-q")),
        conn.send_method(1, M("tx.select")()),
        conn.send_method(1, M("queue.delete")(queue="fz-q")),
        conn.send_method(
            1, M("channel.close")(reply_code=200, reply_text="", class_id=0, method_id=0)
        ),
        conn.send_heartbeat(),
    ]
    return frames


CORPUS = _corpus()


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    data = bytearray(b"".join(draw(st.lists(st.sampled_from(CORPUS), min_size=1, max_size=8))))
    for _ in range(draw(st.integers(0, 6))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set":
            data[at] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xCE, 0xFF]))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[at : at + draw(st.integers(1, 8))]
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


payloads = st.one_of(mutated_frames(), st.binary(max_size=2048))


class ErrorLog(logging.Handler):
    """Collects ERROR records of the broker and of asyncio (unhandled callback errors)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("broker", "asyncio")):
            self.records.append(record)


@pytest.fixture(scope="module")
def errors_logged() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    logging.getLogger().addHandler(handler)
    yield handler
    logging.getLogger().removeHandler(handler)


@pytest.fixture(scope="module")
def broker(errors_logged: ErrorLog) -> Iterator[Broker]:
    with Broker(config={"handshake_timeout": 2.0, "auth_failure_delay": 0.05}) as b:
        yield b


@pytest.fixture(scope="module")
def canary(broker: Broker) -> Iterator[pika.BlockingConnection]:
    """A well-behaved connection that must keep working throughout."""
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    conn.channel().queue_declare("canary")
    yield conn
    conn.close()


def _canary_round_trip(conn: pika.BlockingConnection, n: int) -> None:
    ch = conn.channel()
    body = f"canary {n}".encode()
    ch.basic_publish("", "canary", body)
    assert ch.basic_get("canary", auto_ack=True)[2] == body
    ch.close()


def _send_in_pieces(sock: socket.socket, payload: bytes, cuts: list[int]) -> None:
    last = 0
    try:
        for cut in sorted({min(c, len(payload)) for c in cuts}) + [len(payload)]:
            sock.sendall(payload[last:cut])
            last = cut
    except OSError:
        pass  # the broker closed the connection mid-way: allowed


class Stats:
    cases = 0
    outcomes: dict[str, int] = {}


def _record(outcome: str) -> None:
    Stats.cases += 1
    Stats.outcomes[outcome] = Stats.outcomes.get(outcome, 0) + 1


@FUZZ_SETTINGS
@given(payload=payloads, cuts=st.lists(st.integers(0, 4096), max_size=4))
def test_fuzzed_frames_after_the_handshake(
    broker: Broker, canary: pika.BlockingConnection, payload: bytes, cuts: list[int]
) -> None:
    sock, conn = open_raw(broker.port)
    with sock:
        _send_in_pieces(sock, payload, cuts)
        _record(read_until_quiet(sock, conn, quiet=0.05, limit=3.0))
    _canary_round_trip(canary, Stats.cases)


@FUZZ_SETTINGS
@given(
    payload=st.one_of(
        st.binary(max_size=512).map(lambda b: SPEC_0_9_1.protocol_header + b),
        st.binary(max_size=512),
    )
)
def test_fuzzed_bytes_before_the_handshake(
    broker: Broker, canary: pika.BlockingConnection, payload: bytes
) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as sock:
        _send_in_pieces(sock, payload, [])
        conn = Connection(role="client", spec=SPEC_0_9_1)
        _record(read_until_quiet(sock, conn, quiet=0.05, limit=3.0))
    _canary_round_trip(canary, Stats.cases)


def _seeded_cases(port: int, count: int) -> None:
    """``count`` connections sending corpus frames with random bit flips (a fixed seed)."""
    rnd = random.Random(count)
    for _ in range(count):
        data = bytearray(b"".join(rnd.choices(CORPUS, k=rnd.randint(1, 8))))
        for _ in range(rnd.randint(0, 6)):
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        sock, conn = open_raw(port)
        with sock:
            _send_in_pieces(sock, bytes(data), [])
            read_until_quiet(sock, conn, quiet=0.01, limit=1.0)


def _broker_heap(snapshot: tracemalloc.Snapshot) -> int:
    """Bytes in ``snapshot`` allocated with the broker or the protocol layer on the stack
    (asyncio's transports and buffers included)."""
    keep = [
        tracemalloc.Filter(True, f"{ROOT}/{package}/*", all_frames=True)
        for package in ("broker", "amqp_spark")
    ]
    return sum(stat.size for stat in snapshot.filter_traces(keep).statistics("filename"))


def test_after_fuzzing_nothing_leaked_and_no_internal_error(
    broker: Broker, canary: pika.BlockingConnection, errors_logged: ErrorLog
) -> None:
    """Runs after the fuzz tests of this module (pytest keeps file order)."""
    server = broker.server
    deadline = time.monotonic() + 10
    while len(server.connections) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(server.connections) == 1, "fuzzed connections outlived their sockets"
    assert not errors_logged.records, [r.getMessage() for r in errors_logged.records[:5]]
    _canary_round_trip(canary, -1)
    print(f"\nlive fuzz: {Stats.cases} cases, outcomes {Stats.outcomes}")


def test_broker_memory_does_not_grow_with_fuzzed_connections(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    # pytest keeps every captured log record until the test ends. A fuzzed peer that drops
    # its socket mid-close gets a warning (rules close-ok:reporting): those records are the
    # harness's memory, not the broker's, so the connection log is not captured here.
    caplog.set_level(logging.ERROR, logger="broker.connection")
    _seeded_cases(broker.port, 100)  # warm up: what is allocated once
    gc.collect()
    tracemalloc.start(TRACE_FRAMES)
    try:
        before = _broker_heap(tracemalloc.take_snapshot())
        _seeded_cases(broker.port, HEAP_CASES)
        time.sleep(0.5)
        gc.collect()
        growth = _broker_heap(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()
    print(f"\nbroker heap after {HEAP_CASES} more fuzzed connections: {growth:+d} bytes")
    assert growth < HEAP_GROWTH_LIMIT
