"""What the management plane costs: the broker's throughput with statistics and the
management listener on (its counters bumped on every publish, delivery and ack, its sampler
ticking, nothing polling) beside the same broker without either, and beside one with the
counters but no listener ("counters"), in one run, the three interleaved over several rounds
(the order rotating each round): the median of each figure, and the spread of the per-round
ratios (on/off, counters/off) of the broker's CPU seconds per million messages (issue 18's
bound: at most 3%), the figure that holds best when the machine is loaded; and the resident
memory per queue and per connection of on and off. The load average is printed with it.

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
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.bench_broker import Client, _timed
from benchmarks.bench_load import held
from benchmarks.common import Row, row
from tests.durability.broker_process import BrokerProcess

#: "counters": this broker with its counters but without the listener (and its imports), which
#: tells the counters' cost from the listener's.
MODES = {"on": (), "counters": ("--no-management",), "off": ("--no-management",)}
BROKER_PACKAGE = Path(__file__).resolve().parents[1] / "broker"
LAUNCHER = "broker_without_statistics"
#: A statement that counts (``stats.deliver += 1``, ``self.conn.stats.add(self.stats)``).
COUNTING = re.compile(
    r"^(?P<indent>[ \t]*)(?:[\w.]*stats\.\w+ \+= .*|[\w.]*stats\.add\(.*\)"
    r"|stats, queue_stats = .*)$",
    re.MULTILINE,
)
ROUNDS = 7
QUEUES_HELD = 5000
CONNECTIONS_HELD = 500


def _cpu_seconds(pid: int) -> float:
    """CPU time of process ``pid`` so far, all its threads, to the nanosecond (schedstat;
    /proc/PID/stat counts 10 ms ticks, too coarse for a few percent of a second's work)."""
    return (
        sum(
            int(task.joinpath("schedstat").read_text().split()[0])
            for task in Path(f"/proc/{pid}/task").iterdir()
        )
        / 1e9
    )


def _throughput(pid: int, port: int, n: int) -> dict[str, tuple[float, float]]:
    """Per figure: messages per second, and the broker's CPU seconds per million messages
    (its CPU microseconds per message; less sensitive than the rate to what else runs on
    the machine)."""
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
        for path in (copy / "server").rglob("*.py"):
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


def _rounds(quick: bool) -> tuple[dict[str, list[dict[str, tuple[float, float]]]], dict[str, Any]]:
    """Each mode's figures per round (rounds interleaved, the order alternating), and the
    memory figures of each mode's first round."""
    n = 20_000 if quick else 100_000
    rounds: dict[str, list[dict[str, tuple[float, float]]]] = {mode: [] for mode in MODES}
    memory: dict[str, Any] = {}
    with without_statistics() as stripped:
        for number in range(ROUNDS):
            order = list(MODES)
            for mode in order[number % len(order) :] + order[: number % len(order)]:
                with broker(mode, stripped) as process:
                    assert process.proc is not None
                    rounds[mode].append(_throughput(process.proc.pid, process.port, n))
                    if mode not in memory and mode != "counters":
                        memory[mode] = _memory(process.proc.pid, process.port)
    return rounds, memory


def cpu_ratios(
    rounds: dict[str, list[dict[str, tuple[float, float]]]], mode: str
) -> dict[str, list[float]]:
    """Per figure, each round's ``mode``/off ratio of the broker's CPU per message."""
    return {
        name: [a[name][1] / b[name][1] for a, b in zip(rounds[mode], rounds["off"], strict=True)]
        for name in rounds[mode][0]
    }


def run(quick: bool, ratios: dict[str, list[float]] | None = None) -> list[Row]:
    """The rows (medians over the rounds, on against off); ``ratios``, if given, receives
    the per-round CPU ratios of "on" and of "counters" to "off"."""
    rounds, memory = _rounds(quick)
    if ratios is not None:
        for mode in ("on", "counters"):
            ratios.update({f"{mode}/off, {n}": v for n, v in cpu_ratios(rounds, mode).items()})
    reference = "no statistics, no management"

    def medians(figure: str, unit: str, which: int) -> list[Row]:
        """One row per figure: the median over the rounds of value ``which`` (0: rate,
        1: CPU) with statistics on, against off."""
        return [
            row(
                figure.format(name),
                unit,
                statistics.median(round_[name][which] for round_ in rounds["on"]),
                statistics.median(round_[name][which] for round_ in rounds["off"]),
                reference,
            )
            for name in rounds["on"][0]
        ]

    rows = medians("management on/off: {}", "msgs/s", 0)
    rows += medians("management on/off: broker CPU, {}", "CPU s/1M msgs", 1)
    rows += [
        row(f"management on/off: {name}", "KiB", value, memory["off"][name], reference)
        for name, value in memory["on"].items()
    ]
    return rows


if __name__ == "__main__":
    print(f"load average before: {os.getloadavg()}")
    spread: dict[str, list[float]] = {}
    for r in run("--quick" in sys.argv, spread):
        ratio = f"{r['ours'] / r['reference']:.3f}" if r["reference"] else "-"
        print(f"{r['figure']:<58} {r['ours']:>10.2f} {r['reference'] or 0:>10.2f}  ratio {ratio}")
    for name, values in spread.items():
        print(
            f"CPU {name}, per round: median {statistics.median(values):.3f}, "
            f"min {min(values):.3f}, max {max(values):.3f} ({len(values)} rounds)"
        )
    print(f"load average after: {os.getloadavg()}")
