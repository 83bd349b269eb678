"""What serving a stream over the stream protocol costs the bundled broker: ``python -m
broker`` on a data directory, a stream of N 100-byte messages published over 0-9-1 or over
the stream protocol (stored as AMQP 1.0 messages in Osiris chunks either way, served as
stored; before the ``osiris`` branch 0-9-1 records were converted when served), then
read from ``first`` with a raw stream-protocol client, twice. Prints msgs/s and the
broker's CPU per message (``/proc``).

``python -m benchmarks.ab.stream_protocol_serve [--messages 200000]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from amqp_protocol.amqp10 import from_amqp091
from benchmarks.ab.stream_consume_ab import _connect, _cpu_seconds
from benchmarks.bench_broker import M
from testbed.ports import free_port
from testbed.raw_stream_client import RawClient

TREE = Path(__file__).resolve().parents[2]
BATCH = 100


def _publish_091(port: int, messages: int) -> None:
    client = _connect(port)
    declare = M("queue.declare")(queue="s", durable=True, arguments={"x-queue-type": "stream"})
    client.call(declare, "queue.declare-ok")
    client.call(M("confirm.select")(), "confirm.select-ok")
    client.publish(["s"], messages, confirm=True)
    client.close()


def _publish_stream(uri: str, messages: int) -> None:
    body = from_amqp091({}, b"x" * 100)
    with RawClient(uri) as client:
        client.handshake()
        client.create("s")
        client.declare_publisher(1, "", "s")
        for first in range(0, messages, BATCH):
            client.publish(1, [(first + i, body) for i in range(BATCH)])
            client.confirmed()


def figures(over: str, messages: int) -> list[tuple[float, float]]:
    port, stream_port = free_port(), free_port()
    uri = f"rabbitmq-stream://guest:guest@127.0.0.1:{stream_port}/%2F"
    with tempfile.TemporaryDirectory() as data:
        argv = [sys.executable, "-m", "broker", "--data-dir", data, "--port", str(port)]
        argv += ["--stream-port", str(stream_port), "--no-management", "--log-level", "WARNING"]
        process = subprocess.Popen(argv, cwd=TREE)
        try:
            _connect(port).close()
            if over == "0-9-1":
                _publish_091(port, messages)
            else:
                _publish_stream(uri, messages)
            out = []
            for _ in range(2):
                with RawClient(uri) as reader:
                    reader.handshake()
                    cpu, began = _cpu_seconds(process.pid), time.perf_counter()
                    reader.subscribe(1, "s", credit=60_000)
                    read = 0
                    while read < messages:
                        read += len(reader.delivered()[2])
                    elapsed = time.perf_counter() - began
                    used = _cpu_seconds(process.pid) - cpu
                out.append((messages / elapsed, used / messages * 1e6))
            return out
        finally:
            process.terminate()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    args = parser.parse_args()
    for over in ("0-9-1", "stream protocol"):
        for n, (rate, cpu) in enumerate(figures(over, args.messages)):
            print(f"published over {over}, read {n + 1}: {rate:9.0f} msgs/s, {cpu:5.2f} µs/msg")


if __name__ == "__main__":
    main()
