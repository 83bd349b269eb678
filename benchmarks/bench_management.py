"""What the management plane costs: the broker's throughput with statistics and the
management listener on (its counters bumped on every publish, delivery and ack, its sampler
ticking, nothing polling) beside the same broker without either, and beside one with the
counters but no listener ("counters"), in one run, the three interleaved over several rounds
(the order rotating each round). First the broker's instructions per message, counted under
callgrind (``instructions.py``), which the machine's load does not move: the figure that
decides issue 18's bound (statistics cost at most 3%). Then at full speed: the median of each
figure, the spread of the per-round ratios (on/off, counters/off) of the broker's CPU seconds
per million messages, and the resident memory per queue and per connection of on and off.
The load average is printed with it.

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
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks import instructions
from benchmarks.bench_broker import TIMEOUT, timed_with_cpu, workloads
from benchmarks.bench_load import held
from benchmarks.common import Row, row
from testbed.broker_process import BrokerProcess

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
#: Messages per figure and rounds of the instruction counts (under callgrind, ~50x slower).
COUNTED_MESSAGES = 2_000
COUNTED_ROUNDS = 3
#: The idle window counted: two of the sampler's 5-second ticks.
IDLE_SECONDS = 10.5
IDLE = "idle, per second"
REPOSITORY = BROKER_PACKAGE.parent
#: bench_broker's scenarios measured here (in this order: the consumer drains the backlog).
FIGURES = ("publish, no confirms, 1q", "consume backlog, 1q", "publish, confirms, 1q")
QUEUES_HELD = 5000
CONNECTIONS_HELD = 500


@contextlib.contextmanager
def _workloads(
    port: int, n: int, timeout: float = TIMEOUT
) -> Iterator[dict[str, Callable[[], None]]]:
    """``FIGURES`` of ``bench_broker``'s scenarios on one queue, ``n`` messages each."""
    with workloads("127.0.0.1", port, n, 1, timeout) as scenarios:
        yield {name.removesuffix(", 1q"): scenarios[name] for name in FIGURES}


def _throughput(pid: int, port: int, n: int) -> dict[str, tuple[float, float]]:
    """Per figure: messages per second, and the broker's CPU seconds per million messages
    (its CPU microseconds per message; less sensitive than the rate to what else runs on
    the machine)."""
    results = {}
    with _workloads(port, n) as figures:
        for name, fn in figures.items():
            results[name] = timed_with_cpu(fn, n, pid)
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


def _counted_command(mode: str, stripped: Path) -> instructions.BrokerCommand:
    """The broker of ``mode``, as ``broker`` starts it."""
    return instructions.BrokerCommand(
        REPOSITORY,
        ("--log-level", "WARNING", "--management-port", "0", *MODES[mode]),
        program=LAUNCHER if mode == "off" else "broker",
        pythonpath=(stripped,) if mode == "off" else (),
    )


def instruction_counts(quick: bool) -> dict[str, dict[str, list[float]]]:
    """Per mode, per figure: the broker's instructions per message in each round (the
    modes' brokers all started first, under callgrind; a warm-up round, then rounds
    interleaved, the order rotating), and ``IDLE`` (instructions per second of an idle
    broker: the sampler's ticks, which come per second, not per message, and so weigh
    ~50x more per message under callgrind than at full speed)."""
    n = 1_000 if quick else COUNTED_MESSAGES
    counts: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
    with (
        instructions.Callgrind() as callgrind,
        without_statistics() as stripped,
        instructions.brokers(
            [_counted_command(mode, stripped) for mode in MODES], callgrind
        ) as started,
    ):
        brokers = dict(zip(MODES, started, strict=True))
        for process in brokers.values():  # first-time paths, caches: not counted
            with _workloads(process.port, n // 5, instructions.CLIENT_TIMEOUT) as figures:
                for fn in figures.values():
                    fn()
        for number in range(COUNTED_ROUNDS):
            order = list(MODES)
            for mode in order[number % len(order) :] + order[: number % len(order)]:
                with _workloads(brokers[mode].port, n, instructions.CLIENT_TIMEOUT) as figures:
                    for name, fn in figures.items():
                        with callgrind.count(brokers[mode].pid) as counted:
                            fn()
                        counts[mode].setdefault(name, []).append(counted.instructions / n)
                        print(
                            f"{mode}, {name}: {counted.instructions / n:,.0f} instr/msg",
                            file=sys.stderr,
                        )
        with contextlib.ExitStack() as idle:
            windows = {
                mode: idle.enter_context(callgrind.count(b.pid)) for mode, b in brokers.items()
            }
            time.sleep(IDLE_SECONDS)
        for mode, counted in windows.items():
            counts[mode][IDLE] = [counted.instructions / IDLE_SECONDS]
    return counts


def cpu_ratios(
    rounds: dict[str, list[dict[str, tuple[float, float]]]], mode: str
) -> dict[str, list[float]]:
    """Per figure, each round's ``mode``/off ratio of the broker's CPU per message."""
    return {
        name: [a[name][1] / b[name][1] for a, b in zip(rounds[mode], rounds["off"], strict=True)]
        for name in rounds[mode][0]
    }


def instruction_rows(counts: dict[str, dict[str, list[float]]]) -> list[Row]:
    """Medians of the instruction counts, "on" and "counters" each against "off"."""
    reference = "no statistics, no management"
    return [
        row(
            f"management {mode}/off: broker instructions, {name}",
            "instr/s" if name == IDLE else "instr/msg",
            statistics.median(values),
            statistics.median(counts["off"][name]),
            reference,
        )
        for mode in ("on", "counters")
        for name, values in counts[mode].items()
    ]


def run(
    quick: bool,
    ratios: dict[str, list[float]] | None = None,
    counts: dict[str, dict[str, list[float]]] | None = None,
) -> list[Row]:
    """The rows (medians over the rounds, on against off): instructions first, then rates,
    CPU and memory; ``ratios``, if given, receives the per-round CPU ratios of "on" and of
    "counters" to "off", ``counts`` every instruction count."""
    counted = instruction_counts(quick)
    if counts is not None:
        counts.update(counted)
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

    rows = instruction_rows(counted)
    rows += medians("management on/off: {}", "msgs/s", 0)
    rows += medians("management on/off: broker CPU, {}", "CPU s/1M msgs", 1)
    rows += [
        row(f"management on/off: {name}", "KiB", value, memory["off"][name], reference)
        for name, value in memory["on"].items()
    ]
    return rows


if __name__ == "__main__":
    print(f"load average before: {os.getloadavg()}")
    spread: dict[str, list[float]] = {}
    counts: dict[str, dict[str, list[float]]] = {}
    for r in run("--quick" in sys.argv, spread, counts):
        ratio = f"{r['ours'] / r['reference']:.3f}" if r["reference"] else "-"
        print(f"{r['figure']:<58} {r['ours']:>10.2f} {r['reference'] or 0:>10.2f}  ratio {ratio}")
    for name, values in spread.items():
        print(
            f"CPU {name}, per round: median {statistics.median(values):.3f}, "
            f"min {min(values):.3f}, max {max(values):.3f} ({len(values)} rounds)"
        )
    for mode, figures in counts.items():
        for name, values in figures.items():
            shown = ", ".join(f"{v:,.0f}" for v in values)
            print(
                f"instructions {mode}, {name}: {shown} (spread {instructions.spread(values):.1%})"
            )
    print(f"load average after: {os.getloadavg()}")
