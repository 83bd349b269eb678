"""The 0-9-1 stream consume path of two checkouts, in one session: each tree's
``python -m broker`` on a data directory, a stream of N 100-byte messages published with
confirms, then consumed from ``first`` by ``bench_broker``'s client; rounds interleaved.
Prints msgs/s and the broker's CPU (utime + stime from ``/proc``) per delivered message,
which the machine's other load moves less than the rate.

``python -m benchmarks.ab.stream_consume_ab --before /work/main [--messages 200000]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_broker import Client, M
from testbed.ports import free_port

AFTER = Path(__file__).resolve().parents[2]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _connect(port: int) -> Client:
    for _ in range(100):
        try:
            return Client("127.0.0.1", port)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no broker on port {port}")


def consume_figures(tree: Path, extra: list[str], messages: int) -> tuple[float, float]:
    """(msgs/s, broker CPU µs per message) of one consume from ``first``."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        argv = [sys.executable, "-m", "broker", "--data-dir", data, "--port", str(port)]
        argv += ["--no-management", "--log-level", "WARNING", *extra]
        process = subprocess.Popen(argv, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)))
        try:
            client = _connect(port)
            declare = M("queue.declare")(
                queue="s", durable=True, arguments={"x-queue-type": "stream"}
            )
            client.call(declare, "queue.declare-ok")
            client.call(M("confirm.select")(), "confirm.select-ok")
            client.publish(["s"], messages, confirm=True)
            client.close()
            client = _connect(port)
            cpu, began = _cpu_seconds(process.pid), time.perf_counter()
            client.consume(["s"], messages, {"x-stream-offset": "first"})
            elapsed, used = time.perf_counter() - began, _cpu_seconds(process.pid) - cpu
            client.close()
            return messages / elapsed, used / messages * 1e6
        finally:
            process.terminate()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True, help="the older checkout")
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees: tuple[tuple[str, Path, list[str]], ...] = (
        ("before", args.before, []),
        ("after", AFTER, ["--stream-port", "0"]),
    )
    for n in range(args.rounds):
        for name, tree, extra in trees if n % 2 == 0 else trees[::-1]:
            rate, cpu = consume_figures(tree, extra, args.messages)
            print(f"round {n} {name:6} {rate:10.0f} msgs/s  broker CPU {cpu:5.2f} µs/msg")


if __name__ == "__main__":
    main()
