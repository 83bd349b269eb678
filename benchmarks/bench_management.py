"""What the management plane costs: the broker's throughput with the management listener on
(its counters bumped on every publish, delivery and ack, its sampler ticking, nothing polling)
beside the same broker with ``--no-management``, in one run, alternating the two over three
rounds and keeping each one's best (issue 18's bound: at most 3% slower); and the resident
memory per queue and per connection with it on and off.

Both brokers are programs (``python -m broker --in-memory``), driven by ``bench_broker``'s
pipelined client. ``python -m benchmarks.bench_management [--quick]``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from benchmarks.bench_broker import Client, _timed
from benchmarks.bench_load import held
from benchmarks.common import Row, row
from tests.durability.broker_process import BrokerProcess

MODES = {"on": (), "off": ("--no-management",)}
ROUNDS = 3
QUEUES_HELD = 5000
CONNECTIONS_HELD = 500


def _throughput(port: int, n: int) -> dict[str, float]:
    queues = ["bench-mgmt"]
    confirmed, plain = Client("127.0.0.1", port), Client("127.0.0.1", port)
    confirmed.setup(queues)
    figures: dict[str, Callable[[], None]] = {
        "publish, no confirms": lambda: plain.publish(queues, n, False),
        "consume backlog, acks": lambda: Client("127.0.0.1", port).consume(queues, n),
        "publish, confirms": lambda: confirmed.publish(queues, n, True),
    }
    try:
        return {name: _timed(fn, n) for name, fn in figures.items()}
    finally:
        confirmed.close()
        plain.close()


def _memory(pid: int, port: int) -> dict[str, float]:
    """KiB of resident memory per connection and per queue held (``bench_load.held``)."""
    rows = held(pid, port, CONNECTIONS_HELD, QUEUES_HELD)
    return {r["figure"].removeprefix("load: "): r["ours"] for r in rows if r["unit"] == "KiB"}


def run(quick: bool) -> list[Row]:
    n = 20_000 if quick else 100_000
    best: dict[str, dict[str, float]] = {mode: {} for mode in MODES}
    memory: dict[str, dict[str, float]] = {}
    for _ in range(ROUNDS):
        for mode, args in MODES.items():
            with BrokerProcess(None, "--log-level", "WARNING", *args) as broker:
                assert broker.proc is not None
                for name, value in _throughput(broker.port, n).items():
                    best[mode][name] = max(best[mode].get(name, 0.0), value)
                if mode not in memory:
                    memory[mode] = _memory(broker.proc.pid, broker.port)
    rows = [
        row(f"management on/off: {name}", "msgs/s", value, best["off"][name], "management off")
        for name, value in best["on"].items()
    ]
    rows += [
        row(f"management on/off: {name}", "KiB", value, memory["off"][name], "management off")
        for name, value in memory["on"].items()
    ]
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        ratio = f"{r['ours'] / r['reference']:.3f}" if r["reference"] else "-"
        print(f"{r['figure']:<50} {r['ours']:>10.0f} {r['reference'] or 0:>10.0f}  ratio {ratio}")
