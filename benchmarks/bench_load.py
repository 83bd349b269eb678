"""Load on the bundled broker (a separate process, so its memory can be read): connections
and queues held at once with the broker's resident memory per connection and per queue, and
a consumer that never reads its socket beside a fast one (the fast one's rate, with and
without it, and the messages lost: published minus consumed after the stuck peer left)."""

from __future__ import annotations

import contextlib
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common import Row, row
from testbed.broker_process import BrokerProcess
from testbed.raw_client import M, call, open_raw
from testbed.traffic import consume, publish

CONFIG = "heartbeat = 0\nconnection_max = 20000\nwrite_buffer_high = 1048576\n"


@contextlib.contextmanager
def broker_process() -> Iterator[tuple[int, int]]:
    """(pid, port) of ``python -m broker --in-memory`` on a free port of 127.0.0.1."""
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "broker.toml"
        config.write_text(CONFIG)
        with BrokerProcess(None, "--config", str(config), "--log-level", "WARNING") as broker:
            assert broker.proc is not None
            yield broker.proc.pid, broker.port


def rss(pid: int) -> int:
    """Resident bytes of process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def held(pid: int, port: int, connections: int, queues: int) -> list[Row]:
    socks = []
    try:
        before = rss(pid)
        for _ in range(connections):
            socks.append(open_raw(port))
        answering = sum(
            call(s, c, 1, M("channel.open")()).NAME == "channel.open-ok" for s, c in socks
        )
        per_connection = (rss(pid) - before) / connections
        sock, conn = socks[0]
        before = rss(pid)
        sock.sendall(
            b"".join(
                conn.send_method(1, M("queue.declare")(queue=f"load-{i}", no_wait=True))
                for i in range(queues)
            )
        )
        last = call(sock, conn, 1, M("queue.declare")(queue=f"load-{queues - 1}", passive=True))
        assert last.NAME == "queue.declare-ok", last
        per_queue = (rss(pid) - before) / queues
    finally:
        for s, _ in socks:
            s.close()
    return [
        row("load: connections held, all answering", "connections", answering),
        row("load: broker memory per connection (one channel)", "KiB", per_connection / 1024),
        row("load: queues held", "queues", queues),
        row("load: broker memory per queue", "KiB", per_queue / 1024),
    ]


def stuck_consumer(port: int, fast: int, stuck_count: int) -> list[Row]:
    url = f"amqp://guest:guest@127.0.0.1:{port}/%2F"
    publish(url, "fast-alone", fast, 1024)
    got_alone, alone = consume(url, "fast-alone", fast)
    publish(url, "stuck", stuck_count, 64 * 1024)
    stuck, conn = open_raw(port)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    call(stuck, conn, 1, M("channel.open")())
    stuck.sendall(conn.send_method(1, M("basic.consume")(queue="stuck", consumer_tag="stuck")))
    time.sleep(0.5)
    publish(url, "fast-beside", fast, 1024)
    got_beside, beside = consume(url, "fast-beside", fast)
    stuck.close()
    time.sleep(0.5)  # its unacknowledged deliveries return to the queue
    got_back, _ = consume(url, "stuck", stuck_count)
    lost = (2 * fast + stuck_count) - (got_alone + got_beside + got_back)
    return [
        row(
            "load: fast consumer beside a stuck one",
            "msgs/s",
            fast / beside,
            fast / alone,
            "the same, no stuck consumer",
        ),
        row("load: messages lost (stuck consumer, then recovered)", "messages", lost),
    ]


def run(quick: bool) -> list[Row]:
    connections, queues = (200, 2000) if quick else (1000, 10000)
    with broker_process() as (pid, port):
        rows = held(pid, port, connections, queues)
    with broker_process() as (_, port):
        rows += stuck_consumer(port, 2000 if quick else 10000, 100 if quick else 400)
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        reference = f"{r['reference']:.1f} ({r['reference_name']})" if r["reference"] else ""
        print(f"{r['figure']:<55} {r['ours']:>10.1f} {r['unit']:<12} {reference}")
