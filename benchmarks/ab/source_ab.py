"""The source of two checkouts, run after run: ``source_one_run.py`` (one AvailableNow run of
200,000 x 100 B at ``prefetch`` 131070 on the tree's own bundled broker, in a fresh driver)
with each tree's interpreter from its checkout, in pairs whose order alternates (before,
after, after, before, ...) so that a drift of the machine weighs on both alike.

A run's rate moves ~10% between two runs of one tree on a quiet machine, so one pair
settles nothing: the report gives, per tree, the median over its runs of rows/s and of each
process's CPU-s per million rows, the median of the per-pair ratios after/before, and each
tree's own spread (max/min - 1 over its runs): a ratio whose distance from 1 is within
the spreads is noise.

``python -m benchmarks.ab.source_ab --before DIR --before-python PY [--pairs 4]``: ``PY`` is an
interpreter that imports the older tree's ``amqp_spark`` and ``broker`` from ``DIR`` and has
pyspark (a venv whose site-packages holds a ``.pth`` naming ``DIR`` and then this venv's
site-packages will do); Spark's Python workers run it too, and each run's JSON says where
they imported ``amqp_spark`` from, which is checked. Writes
``benchmarks/results/source_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.ab.before_after import AFTER, Started, report
from benchmarks.instructions import spread

ONE_RUN = Path(__file__).with_name("source_one_run.py")
RESULTS = AFTER / "benchmarks" / "results" / "source_ab.json"
#: The processes whose CPU is compared (the driver only waits).
PROCESSES = ("broker", "jvm", "runner", "executors")


def one_run(tree: Path, python: str, count: int) -> dict[str, Any]:
    """One run of ``tree``'s source: ``source_one_run.py``'s JSON line."""
    done = subprocess.run(
        [python, str(ONE_RUN), "--count", str(count)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    run: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(run["workers_import"]).is_relative_to(tree):
        raise RuntimeError(f"Spark's workers imported {run['workers_import']}, not {tree}'s")
    return run


def figures(run: dict[str, Any]) -> dict[str, float]:
    """rows/s; CPU-s per million rows of each compared process and of them all; and the
    seconds of Spark's phases, summed over the run's micro-batches (``phase: ...``)."""
    cpu = {name: float(run["cpu_s_per_million"].get(name, 0.0)) for name in PROCESSES}
    phases = {f"phase: {name} (s)": float(s) for name, s in run.get("phases_s", {}).items()}
    return {"rows/s": float(run["rows_per_s"]), **cpu, "CPU in all": sum(cpu.values()), **phases}


def table(pairs: list[dict[str, dict[str, Any]]]) -> str:
    """Markdown: per figure, each tree's median and spread, the median per-pair ratio."""
    lines = [
        "| figure | before | after | after/before (median of pairs) | spread before / after |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    by_tree = {tree: [figures(pair[tree]) for pair in pairs] for tree in ("before", "after")}
    for name in by_tree["before"][0]:
        before = [f.get(name, 0.0) for f in by_tree["before"]]
        after = [f.get(name, 0.0) for f in by_tree["after"]]
        ratios = [a / b for a, b in zip(after, before, strict=True) if b > 0]
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "-"
        # a phase of a few milliseconds rounds to 0 in some runs: no spread to give then
        spreads = " / ".join(f"{spread(v):.1%}" if min(v) > 0 else "-" for v in (before, after))
        lines.append(
            f"| {name} | {statistics.median(before):,.1f} | {statistics.median(after):,.1f} | "
            f"{ratio} | {spreads} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab.source_ab", description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="the older checkout")
    parser.add_argument("--before-python", required=True, help="its interpreter (see above)")
    parser.add_argument("--pairs", type=int, default=4, help="pairs of runs (default 4)")
    parser.add_argument("--count", type=int, default=200_000, help="messages per run")
    args = parser.parse_args(argv)
    trees = {
        "before": (args.before.resolve(), args.before_python),
        "after": (AFTER, sys.executable),
    }
    started = Started()
    pairs: list[dict[str, dict[str, Any]]] = []
    for number in range(args.pairs):
        order = ["before", "after"] if number % 2 == 0 else ["after", "before"]
        pair = {}
        for tree in order:
            root, python = trees[tree]
            pair[tree] = one_run(root, python, args.count)
            print(f"pair {number + 1}/{args.pairs} {tree}: {pair[tree]}", file=sys.stderr)
        pairs.append(pair)
    roots = {name: root for name, (root, _) in trees.items()}
    report(RESULTS, started, roots, pairs, table(pairs), count=args.count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
