"""The bundled brokers of two checkouts over sockets, with the noise measured beside them.

Rates and CPU seconds on this shared VM move 20-50% from one run of a scenario to the next
(measured: three rounds of 50,000 messages of the same broker), so a few best-of-three
rates cannot show a difference of a few percent either way. Here each figure is taken over
many short rounds, interleaved (the order of the brokers rotating from round to round), and
judged against an A/A control: a second broker of the ``before`` tree, whose ratio to the
first is what the noise alone makes of the same code.

The ``after`` tree runs three ways: with its statistics' counting statements stripped
(``bench_management.without_statistics``: what compares with an older tree that had no
statistics), with its counters but no management listener, and as shipped.

Per round, each broker runs ``bench_broker``'s eight scenarios (1 and 10 queues; publish,
consume the backlog, confirmed publish, publish and consume at once) over ``--messages``
messages each, driven by this process with ``bench_broker``'s pipelined client. Two
figures per scenario: the broker's CPU per message (schedstat of its process: time on a
core, which waiting for the client or a busy core does not add to) and the rate the client
sees. Each is divided by the first ``before`` broker's figure of the same round; the table
gives the median of those ratios over the rounds and their interquartile range.

``python -m benchmarks.ab.broker_ab --before /work/wt/measure-before [--rounds 15]
[--messages 20000]`` prints the table as Markdown and writes
``benchmarks/results/broker_ab.json`` (every round's figures, under ``results``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks import instructions
from benchmarks.ab.before_after import AFTER, Started, check_origin, report
from benchmarks.bench_broker import QUEUE_COUNTS, timed_with_cpu, workloads
from benchmarks.bench_management import LAUNCHER, without_statistics

RESULTS = AFTER / "benchmarks" / "results" / "broker_ab.json"
LOG = ("--log-level", "WARNING")
#: Round figures: configuration -> scenario -> (CPU microseconds per message, messages/s).
Round = dict[str, dict[str, tuple[float, float]]]


def configurations(before: Path, stripped: Path) -> dict[str, instructions.BrokerCommand]:
    """The brokers compared; ``before`` first (the reference of every ratio), ``before
    again`` the A/A control, both with the management listener on as ``after``.
    ``stripped``: ``without_statistics``' folder."""
    quiet = (*LOG, "--no-management", "--stream-port", "0")
    return {
        "before": instructions.BrokerCommand(before, (*LOG, "--management-port", "0")),
        "before again": instructions.BrokerCommand(before, (*LOG, "--management-port", "0")),
        "after, statistics off": instructions.BrokerCommand(
            AFTER, quiet, program=LAUNCHER, pythonpath=(stripped,)
        ),
        "after, no management": instructions.BrokerCommand(AFTER, quiet),
        "after": instructions.BrokerCommand(
            AFTER, (*LOG, "--management-port", "0", "--stream-port", "0")
        ),
    }


def scenario_figures(broker: instructions.Broker, n: int) -> dict[str, tuple[float, float]]:
    """Every scenario once: (the broker's CPU microseconds per message, messages/s)."""
    figures = {}
    for nq in QUEUE_COUNTS:
        with workloads("127.0.0.1", broker.port, n, nq) as scenarios:
            for name, fn in scenarios.items():
                rate, cpu = timed_with_cpu(fn, n, broker.pid)
                figures[name] = (cpu, rate)
    return figures


def measure(commands: dict[str, instructions.BrokerCommand], rounds: int, n: int) -> list[Round]:
    """``rounds`` rounds after a warm-up one; each round's order is the last one's rotated."""
    names = list(commands)
    measured: list[Round] = []
    with instructions.brokers(list(commands.values())) as started:
        brokers = dict(zip(names, started, strict=True))
        for name in names:
            scenario_figures(brokers[name], n // 5)
        for number in range(rounds):
            order = names[number % len(names) :] + names[: number % len(names)]
            print(f"round {number + 1}/{rounds}: load {os.getloadavg()[0]:.2f}", file=sys.stderr)
            measured.append({name: scenario_figures(brokers[name], n) for name in order})
    return measured


def ratios(measured: list[Round], name: str, scenario: str, figure: int) -> list[float]:
    """Per round: ``name``'s figure (0 CPU, 1 rate) over the ``before`` broker's."""
    return [r[name][scenario][figure] / r["before"][scenario][figure] for r in measured]


def summary(values: list[float]) -> str:
    """Median and interquartile range of ``values``."""
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return f"{median:.3f} ({q1:.3f}-{q3:.3f})"


def table(measured: list[Round]) -> str:
    """Markdown: per scenario, each configuration's median ratio to ``before`` and its
    interquartile range, by CPU per message and by rate; the last row, the geometric mean
    of the medians over the scenarios."""
    names = [name for name in measured[0] if name != "before"]
    scenarios = list(measured[0]["before"])
    header = " | ".join(f"{name}: CPU / rate" for name in names)
    rule = "|---" * (2 + len(names)) + "|"
    lines = [f"| scenario | before: CPU µs/msg, msg/s | {header} |", rule]
    means: dict[str, list[list[float]]] = {name: [[], []] for name in names}
    for scenario in scenarios:
        cpu = statistics.median(r["before"][scenario][0] for r in measured)
        rate = statistics.median(r["before"][scenario][1] for r in measured)
        cells = []
        for name in names:
            by_cpu, by_rate = (ratios(measured, name, scenario, figure) for figure in (0, 1))
            means[name][0].append(statistics.median(by_cpu))
            means[name][1].append(statistics.median(by_rate))
            cells.append(f"{summary(by_cpu)} / {summary(by_rate)}")
        lines.append(f"| {scenario} | {cpu:.1f}, {rate:,.0f} | " + " | ".join(cells) + " |")
    overall = [
        f"{statistics.geometric_mean(means[name][0]):.3f} / "
        f"{statistics.geometric_mean(means[name][1]):.3f}"
        for name in names
    ]
    lines.append("| geometric mean of the medians | | " + " | ".join(overall) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab.broker_ab", description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="the older checkout")
    parser.add_argument("--rounds", type=int, default=15, help="measured rounds (default 15)")
    parser.add_argument("--messages", type=int, default=20_000, help="per scenario and round")
    args = parser.parse_args(argv)
    if args.rounds < 4:
        parser.error(f"--rounds {args.rounds}: quartiles need at least 4 rounds")
    before = args.before.resolve()
    for tree in (before, AFTER):
        check_origin(tree)
    started = Started()
    with without_statistics() as stripped:
        measured = measure(configurations(before, stripped), args.rounds, args.messages)
    trees = {"before": before, "after": AFTER}
    report(RESULTS, started, trees, measured, table(measured), messages=args.messages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
