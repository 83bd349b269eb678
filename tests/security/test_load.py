"""Load: a thousand concurrent connections and ten thousand queues held at once, and a
consumer that stops reading its socket beside fast ones: the broker buffers a bounded amount
for it, the fast consumer is not slowed, and no message is lost."""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import Broker
from broker.server.app import BrokerServer
from testbed.raw_client import M, call, open_raw
from testbed.traffic import consume, publish
from tests.support.open_files import raise_open_files_limit

CONNECTIONS = 1000
QUEUES = 10000
WRITE_BUFFER_HIGH = 1 << 20


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(config={"write_buffer_high": WRITE_BUFFER_HIGH, "heartbeat": 0}) as b:
        yield b


def _server(broker: Broker) -> BrokerServer:
    return broker.server


@pytest.mark.slow
def test_a_thousand_connections_and_ten_thousand_queues_are_held(broker: Broker) -> None:
    # Both ends of every connection are in this process; the broker raised the limit for
    # its own end at start, but the client end does not rely on that.
    raise_open_files_limit(2 * CONNECTIONS + 100)
    before = _rss()
    socks = []
    try:
        for _ in range(CONNECTIONS):
            sock, conn = open_raw(broker.port)
            socks.append((sock, conn))
        per_connection = (_rss() - before) / CONNECTIONS
        sock, conn = socks[0]
        call(sock, conn, 1, M("channel.open")())
        declares = b"".join(
            conn.send_method(1, M("queue.declare")(queue=f"load-{i}", no_wait=True))
            for i in range(QUEUES)
        )
        before_queues = _rss()
        sock.sendall(declares)
        ok = call(sock, conn, 1, M("queue.declare")(queue=f"load-{QUEUES - 1}", passive=True))
        assert ok.NAME == "queue.declare-ok"
        per_queue = (_rss() - before_queues) / QUEUES
        server = _server(broker)
        assert len(server.connections) == CONNECTIONS
        assert len(server.vhosts["/"].queues) == QUEUES
        # Every connection still answers.
        for i, (s, c) in enumerate(socks[1:], start=1):
            assert call(s, c, 1, M("channel.open")()).NAME == "channel.open-ok", i
        print(
            f"\n{CONNECTIONS} connections: {per_connection / 1024:.1f} KiB each; "
            f"{QUEUES} queues: {per_queue / 1024:.2f} KiB each"
        )
    finally:
        for s, _ in socks:
            s.close()


@pytest.mark.slow
def test_a_stuck_consumer_is_bounded_and_does_not_slow_the_fast_one(broker: Broker) -> None:
    fast_count, slow_count, size = 5000, 400, 64 * 1024
    publish(broker.url, "fast-alone", fast_count, 1024)
    received, alone = consume(broker.url, "fast-alone", fast_count)
    assert received == fast_count

    publish(broker.url, "slow", slow_count, size)  # 25 MiB for a consumer that never reads
    stuck, conn = open_raw(broker.port)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    call(stuck, conn, 1, M("channel.open")())
    stuck.sendall(conn.send_method(1, M("basic.consume")(queue="slow", consumer_tag="stuck")))
    time.sleep(0.5)
    server = _server(broker)
    peer = f"127.0.0.1:{stuck.getsockname()[1]}"
    (held,) = [c for c in server.connections if c.peer == peer]
    assert held.transport is not None
    buffered = held.transport.get_write_buffer_size()
    # Deliveries stop once the output waiting for the socket passes the watermark: what is
    # held for a peer that never reads is at most twice it, plus a message.
    assert buffered <= 2 * WRITE_BUFFER_HIGH + size
    # And whatever that peer publishes waits in its socket: the broker stopped reading it.
    assert not held.transport.is_reading()

    publish(broker.url, "fast-beside", fast_count, 1024)
    received, beside = consume(broker.url, "fast-beside", fast_count)
    assert received == fast_count
    print(
        f"\nfast consumer: {alone:.2f}s alone, {beside:.2f}s beside a stuck one; "
        f"{buffered} bytes buffered for the stuck one"
    )
    assert beside < 2 * alone + 1.0

    stuck.close()  # its unacknowledged deliveries go back to the queue
    deadline = time.monotonic() + 5
    slow_queue = server.vhosts["/"].queues["slow"]
    while slow_queue.message_count < slow_count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert consume(broker.url, "slow", slow_count)[0] == slow_count  # none lost
