"""What the management plane costs: the broker's throughput with statistics and the
management listener on (its counters bumped on every publish, delivery and ack, its sampler
ticking, nothing polling) beside the same broker without either, in one run, alternating the
two over five rounds and keeping each one's best (issue 18's bound: at most 3% slower); and
the resident memory per queue and per connection of both.

The counters are plain increments that run whether the listener is on or not (a flag to skip
them would cost as much as they do), so "off" is a copy of this broker's package with every
counting statement replaced by ``pass`` (``without_statistics``), run with
``--no-management``. Both brokers are programs (``python -m broker --in-memory``), driven by
``bench_broker``'s pipelined client. ``python -m benchmarks.bench_management [--quick]``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.bench_broker import Client, _timed
from benchmarks.bench_load import held
from benchmarks.common import Row, row
from tests.durability.broker_process import BrokerProcess

MODES = {"on": (), "off": ("--no-management",)}
BROKER_PACKAGE = Path(__file__).resolve().parents[1] / "broker"
LAUNCHER = "broker_without_statistics"
#: A statement that counts (``stats.deliver += 1``, ``self.conn.stats.add(self.stats)``).
COUNTING = re.compile(
    r"^(?P<indent>[ \t]*)(?:[\w.]*stats\.\w+ \+= .*|[\w.]*stats\.add\(.*\)"
    r"|stats, queue_stats = .*)$",
    re.MULTILINE,
)
ROUNDS = 5
QUEUES_HELD = 5000
CONNECTIONS_HELD = 500


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _throughput(pid: int, port: int, n: int) -> dict[str, tuple[float, float]]:
    """Per figure: messages per second, and the broker's CPU microseconds per message (less
    sensitive than the rate to what else runs on the machine)."""
    queues = ["bench-mgmt"]
    confirmed, plain = Client("127.0.0.1", port), Client("127.0.0.1", port)
    confirmed.setup(queues)
    figures: dict[str, Callable[[], None]] = {
        "publish, no confirms": lambda: plain.publish(queues, n, False),
        "consume backlog, acks": lambda: Client("127.0.0.1", port).consume(queues, n),
        "publish, confirms": lambda: confirmed.publish(queues, n, True),
    }
    results = {}
    try:
        for name, fn in figures.items():
            cpu = _cpu_seconds(pid)
            rate = _timed(fn, n)
            results[name] = (rate, (_cpu_seconds(pid) - cpu) / n * 1e6)
    finally:
        confirmed.close()
        plain.close()
    return results


def _memory(pid: int, port: int) -> dict[str, float]:
    """KiB of resident memory per connection and per queue held (``bench_load.held``)."""
    rows = held(pid, port, CONNECTIONS_HELD, QUEUES_HELD)
    return {r["figure"].removeprefix("load: "): r["ours"] for r in rows if r["unit"] == "KiB"}


@contextlib.contextmanager
def without_statistics() -> Iterator[Path]:
    """A directory to put on PYTHONPATH: a copy of the broker package whose counting
    statements are ``pass``, and ``LAUNCHER``, the module that runs it."""
    with tempfile.TemporaryDirectory(prefix="broker-without-stats-") as folder:
        copy = Path(folder) / "broker"
        shutil.copytree(BROKER_PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
        replaced = 0
        for path in (copy / "server").glob("*.py"):
            text, n = COUNTING.subn(r"\g<indent>pass", path.read_text())
            path.write_text(text)
            replaced += n
        if replaced < 10:
            raise RuntimeError(f"only {replaced} counting statements found: COUNTING is stale")
        # ``python -m broker`` would import the repository's broker (the working directory
        # comes first on sys.path); this launcher puts the copy first.
        (Path(folder) / f"{LAUNCHER}.py").write_text(
            f"import runpy, sys\nsys.path.insert(0, {folder!r})\nimport broker\n"
            f"assert broker.__file__.startswith({folder!r}), broker.__file__\n"
            "runpy.run_module('broker', run_name='__main__')\n"
        )
        yield Path(folder)


@contextlib.contextmanager
def broker(mode: str, stripped: Path) -> Iterator[BrokerProcess]:
    before = os.environ.get("PYTHONPATH")
    if mode == "off":
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(stripped), before]))
    try:
        program = LAUNCHER if mode == "off" else "broker"
        args = ("--log-level", "WARNING", *MODES[mode])
        with BrokerProcess(None, *args, program=program) as process:
            yield process
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def run(quick: bool) -> list[Row]:
    n = 20_000 if quick else 100_000
    best: dict[str, dict[str, float]] = {mode: {} for mode in MODES}
    cpu: dict[str, dict[str, float]] = {mode: {} for mode in MODES}
    memory: dict[str, dict[str, float]] = {}
    with without_statistics() as stripped:
        for _ in range(ROUNDS):
            for mode in MODES:
                with broker(mode, stripped) as process:
                    assert process.proc is not None
                    figures = _throughput(process.proc.pid, process.port, n)
                    for name, (rate, micros) in figures.items():
                        best[mode][name] = max(best[mode].get(name, 0.0), rate)
                        cpu[mode][name] = min(cpu[mode].get(name, float("inf")), micros)
                    if mode not in memory:
                        memory[mode] = _memory(process.proc.pid, process.port)
    reference = "no statistics, no management"
    rows = [
        row(f"management on/off: {name}", "msgs/s", value, best["off"][name], reference)
        for name, value in best["on"].items()
    ]
    rows += [
        row(f"management on/off: broker CPU, {name}", "us/msg", value, cpu["off"][name], reference)
        for name, value in cpu["on"].items()
    ]
    rows += [
        row(f"management on/off: {name}", "KiB", value, memory["off"][name], reference)
        for name, value in memory["on"].items()
    ]
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        ratio = f"{r['ours'] / r['reference']:.3f}" if r["reference"] else "-"
        print(f"{r['figure']:<58} {r['ours']:>10.2f} {r['reference'] or 0:>10.2f}  ratio {ratio}")
