"""Two checkouts, one session: the codec and the bundled broker of an older tree ("before")
beside this one's ("after"), interleaved round by round (the order alternating), by
instructions per message (``instructions.py``: callgrind, which the machine's load does not
move) and by rate.

- codec: each tree's own ``benchmarks/bench_codec.py`` (the same workloads): its
  operations counted in a child under callgrind (``codec_child.py``), and its ``run``,
  rates beside pamqp's, in a child at full speed;
- broker: each tree's ``python -m broker --in-memory`` (its own code: started in its
  checkout), driven by this tree's ``bench_broker`` client and scenarios: the broker's
  instructions per message under callgrind, messages per second at full speed.

``python -m benchmarks.ab.before_after --before /work/wt/measure-before [--quick]`` prints a
Markdown table (count medians, the count spread of each tree over the rounds, the best rate
of the rounds) with the load and writes ``benchmarks/results/before_after.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import instructions
from benchmarks.bench_broker import QUEUE_COUNTS, _timed, workloads

AFTER = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("codec_child.py")
RESULTS = AFTER / "benchmarks" / "results" / "before_after.json"
#: Operations per codec figure and messages per broker figure under callgrind.
CODEC_COUNTED = 1_000
BROKER_COUNTED = 1_500
BROKER_MESSAGES = 50_000
ROUNDS = 3
#: Both trees' brokers run as their users run them, with the management listener on (on an
#: ephemeral port).
BROKER_ARGS = ("--log-level", "WARNING", "--management-port", "0")

Figures = dict[str, list[float]]


def _environment(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED=instructions.HASH_SEED)


def check_origin(tree: Path) -> None:
    """Fail unless ``tree``'s broker is what ``python -m broker`` imports in ``tree``."""
    where = subprocess.run(
        [sys.executable, "-c", "import broker; print(broker.__file__)"],
        cwd=tree,
        env=_environment(tree),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not Path(where).is_relative_to(tree):
        raise RuntimeError(f"python -m broker in {tree} imports {where}")


def codec_counts(callgrind: instructions.Callgrind, tree: Path, n: int) -> dict[str, float]:
    """Instructions per operation of ``tree``'s codec."""
    command = callgrind.wrap([sys.executable, str(CHILD), str(n)])
    child = subprocess.Popen(
        command,
        cwd=tree,
        env=_environment(tree),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        origin = json.loads(child.stdout.readline())
        if not all(Path(path).is_relative_to(tree) for path in origin.values()):
            raise RuntimeError(f"the codec child ran another tree's code: {origin}")
        counts = {}
        while name := child.stdout.readline().strip():
            with callgrind.count(child.pid) as counted:
                child.stdin.write("go\n")
                child.stdin.flush()
                if child.stdout.readline().strip() != "done":
                    raise RuntimeError(f"the codec child stopped in {name}")
            counts[name] = counted.instructions / n
            child.stdin.write("next\n")
            child.stdin.flush()
        return counts
    finally:
        child.kill()
        child.wait(30)


def codec_rates(tree: Path, quick: bool) -> dict[str, float]:
    """Our rates of ``tree``'s ``bench_codec.run`` (best of three, each beside pamqp's)."""
    script = (
        "import json, sys; from benchmarks import bench_codec; "
        "print(json.dumps(bench_codec.run(sys.argv[1] == 'quick')))"
    )
    output = subprocess.run(
        [sys.executable, "-c", script, "quick" if quick else "full"],
        cwd=tree,
        env=_environment(tree),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {r["figure"]: r["ours"] for r in json.loads(output)}


def broker_figures(
    port: int, n: int, counting: tuple[instructions.Callgrind, int] | None
) -> dict[str, float]:
    """Per scenario: the broker's instructions per message (``counting``: the callgrind and
    pid of a broker under it), or messages per second."""
    figures = {}
    for nq in QUEUE_COUNTS:
        with workloads("127.0.0.1", port, n, nq, instructions.CLIENT_TIMEOUT) as scenarios:
            for name, fn in scenarios.items():
                if counting is None:
                    figures[name] = _timed(fn, n)
                    continue
                callgrind, pid = counting
                with callgrind.count(pid) as counted:
                    fn()
                figures[name] = counted.instructions / n
    return figures


def _add(into: dict[str, Figures], tree: str, figures: dict[str, float]) -> None:
    for name, value in figures.items():
        into.setdefault(name, {}).setdefault(tree, []).append(value)


def measure(trees: dict[str, Path], quick: bool) -> dict[str, Any]:
    """Per kind of figure (``codec instructions``, ``codec rate``, ``broker instructions``,
    ``broker rate``), per figure, per tree: the value of each round. Each tree's brokers
    (one under callgrind, one at full speed) start once and get a warm-up round first."""
    results: dict[str, dict[str, Any]] = {
        kind: {}
        for kind in ("codec instructions", "codec rate", "broker instructions", "broker rate")
    }
    codec_n = CODEC_COUNTED // 4 if quick else CODEC_COUNTED
    broker_n = BROKER_COUNTED // 4 if quick else BROKER_COUNTED
    messages = BROKER_MESSAGES // 5 if quick else BROKER_MESSAGES
    commands = [instructions.BrokerCommand(root, BROKER_ARGS) for root in trees.values()]
    with (
        instructions.Callgrind() as callgrind,
        instructions.brokers(commands, callgrind) as under_callgrind,
        instructions.brokers(commands) as full_speed,
    ):
        counted = dict(zip(trees, under_callgrind, strict=True))
        timed = dict(zip(trees, full_speed, strict=True))
        for tree in trees:
            broker_figures(counted[tree].port, broker_n // 5, None)
            broker_figures(timed[tree].port, messages // 5, None)
        for number in range(ROUNDS):
            order = list(trees) if number % 2 == 0 else list(reversed(trees))
            print(f"round {number + 1}: {order}, load {os.getloadavg()}", file=sys.stderr)
            for tree in order:
                root = trees[tree]
                print(f"{tree}: codec", file=sys.stderr)
                _add(results["codec instructions"], tree, codec_counts(callgrind, root, codec_n))
                _add(results["codec rate"], tree, codec_rates(root, quick))
                print(f"{tree}: broker", file=sys.stderr)
                counts = broker_figures(
                    counted[tree].port, broker_n, (callgrind, counted[tree].pid)
                )
                _add(results["broker instructions"], tree, counts)
                rates = broker_figures(timed[tree].port, messages, None)
                _add(results["broker rate"], tree, rates)
    return results


def commit(tree: Path) -> str:
    """``tree``'s checked-out commit and its date."""
    return subprocess.run(
        ["git", "-C", str(tree), "log", "-1", "--format=%h %cs"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def table(results: dict[str, Any]) -> str:
    """Markdown: per figure, before and after (count medians, best rates), after/before, and
    each tree's count spread over the rounds."""
    lines = [
        "| figure | unit | before | after | after/before | spread before / after |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for kind, figures in results.items():
        counted = "instructions" in kind
        unit = "instr/msg" if counted else "msg/s"
        for name, trees in figures.items():
            pick = statistics.median if counted else max
            before, after = pick(trees["before"]), pick(trees["after"])
            spreads = (instructions.spread(trees["before"]), instructions.spread(trees["after"]))
            spread = f"{spreads[0]:.1%} / {spreads[1]:.1%}"
            lines.append(
                f"| {kind.split()[0]}: {name} | {unit} | {before:,.0f} | {after:,.0f} | "
                f"{after / before:.3f} | {spread} |"
            )
    return "\n".join(lines)


class Started:
    """When a measurement began, and the load average then."""

    def __init__(self) -> None:
        self.date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        self.load = os.getloadavg()


def report(
    path: Path,
    started: Started,
    trees: dict[str, Path],
    results: object,
    markdown: str,
    **settings: object,
) -> None:
    """Write the run's header (start, load then and now, each tree's commit, ``settings``)
    and ``results`` to ``path`` as JSON; print the header and the table."""
    header = {
        "date": started.date,
        "commits": {name: commit(root) for name, root in trees.items()},
        "load": [started.load, os.getloadavg()],
        **settings,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**header, "results": results}, indent=2) + "\n")
    print(json.dumps(header))
    print(markdown)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab.before_after", description=__doc__
    )
    parser.add_argument("--before", type=Path, required=True, help="the older checkout")
    parser.add_argument("--quick", action="store_true", help="smaller counts and rates")
    args = parser.parse_args(argv)
    if not instructions.available():
        parser.error("valgrind's callgrind is needed (Debian: apt-get install valgrind)")
    trees = {"before": args.before.resolve(), "after": AFTER}
    for root in trees.values():
        check_origin(root)
    started = Started()
    results = measure(trees, args.quick)
    report(RESULTS, started, trees, results, table(results), rounds=ROUNDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
