"""The broker's work per message, deterministic: ``broker_work_child.py`` drives a tree's
broker in process (no sockets, no timing: the same bytes in the same chunks each run), and
this counts it two ways, each exact from run to run:

- Python bytecodes per message, per function (``sys.settrace`` opcodes), which say *where*
  the work goes (``--diff A B`` lists the functions whose count changed most);
- instructions per message under callgrind (``instructions.py``), which include the C work.

Configurations (``CONFIGURATIONS``): this tree with the management listener ("on"), with
its counters but no listener ("counters"), without either ("off": the counting statements
``pass``, as ``bench_management.without_statistics`` makes it), and ``--before``'s tree
(an older checkout). ``python -m benchmarks.ab.broker_work
[--before DIR] [--callgrind] [--diff A B]`` prints a Markdown table of per-message figures
and the ratios that issues 18 (on/off, counters/off) and 19 (off/before) are judged by.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import instructions
from benchmarks.bench_management import without_statistics

TREE = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("broker_work_child.py")
#: Messages per workload: bytecode counting is ~30x slower, callgrind ~50x.
MESSAGES = 1_000

Opcodes = dict[str, Counter[str]]


def _command(tree: Path, mode: str, n: int, measure: str, rounds: int) -> list[str]:
    return [sys.executable, str(CHILD), mode, str(n), measure, str(rounds)]


def _environment(tree: Path, first: Path | None) -> dict[str, str]:
    path = os.pathsep.join(str(p) for p in (first, tree) if p is not None)
    return dict(os.environ, PYTHONPATH=path, PYTHONHASHSEED=instructions.HASH_SEED)


def _check_origin(line: str, tree: Path, first: Path | None) -> None:
    where = Path(json.loads(line)["broker"])
    if not where.is_relative_to(first or tree):
        raise RuntimeError(f"the child ran the broker of {where}, not of {first or tree}")


def opcodes(
    tree: Path,
    mode: str,
    n: int,
    first: Path | None = None,
    rounds: int = 1,
    measure: str = "opcodes",
) -> Opcodes:
    """Per workload: bytecodes per message, per function (of the last round); with
    ``measure="adaptive"``, per function and specialised instruction form."""
    output = subprocess.run(
        _command(tree, mode, n, measure, rounds),
        cwd=tree,
        env=_environment(tree, first),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    _check_origin(output[0], tree, first)
    counts: Opcodes = {}
    for line in output[1:]:
        record = json.loads(line)
        if "name" in record:
            counts[record["name"]] = Counter({k: v / n for k, v in record["opcodes"].items()})
    return counts


def callgrind(
    tree: Path, mode: str, n: int, first: Path | None = None, rounds: int = 2
) -> dict[str, list[float]]:
    """Per workload: instructions per message, one figure per round."""
    counts: dict[str, list[float]] = {}
    with instructions.Callgrind() as grind:
        child = subprocess.Popen(
            grind.wrap(_command(tree, mode, n, "callgrind", rounds)),
            cwd=tree,
            env=_environment(tree, first),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        try:
            _check_origin(child.stdout.readline(), tree, first)
            while name := json.loads(child.stdout.readline()).get("name"):
                with grind.count(child.pid) as counted:
                    child.stdin.write("go\n")
                    child.stdin.flush()
                    if child.stdout.readline().strip() != "done":
                        raise RuntimeError(f"the child stopped in {name}")
                counts.setdefault(name, []).append(counted.instructions / n)
                child.stdin.write("next\n")
                child.stdin.flush()
        finally:
            child.kill()
            child.wait(30)
    return counts


@contextlib.contextmanager
def configurations(before: Path | None) -> Iterator[dict[str, tuple[Path, str, Path | None]]]:
    """name: (tree, mode, a directory put first on the path)."""
    with without_statistics() as stripped:
        found = {
            "on": (TREE, "on", None),
            "counters": (TREE, "counters", None),
            "off": (TREE, "counters", stripped),
        }
        if before is not None:
            found["before"] = (before.resolve(), "counters", None)
        yield found


def diff(a: Opcodes, b: Opcodes, most: int = 12) -> str:
    """Per workload: the functions whose bytecodes per message differ most from a to b."""
    lines = []
    for workload in a:
        lines.append(
            f"{workload}: {sum(a[workload].values()):.1f} -> {sum(b[workload].values()):.1f}"
        )
        lines += diff_lines(a[workload], b[workload], most)
    return "\n".join(lines)


def by_form(counts: Counter[str]) -> Counter[str]:
    """``path:qualname OPNAME`` counts summed per ``OPNAME``."""
    found: Counter[str] = Counter()
    for name, value in counts.items():
        found[name.rsplit(" ", 1)[1]] += value
    return found


def adaptive_diff(a: Opcodes, b: Opcodes, most: int = 15) -> str:
    """Per workload: the specialised instruction forms, and the functions' forms, whose
    executions per message differ most from a to b (``*_ADAPTIVE``: specialising failed)."""
    lines = []
    for workload in a:
        lines.append(f"{workload}: per form")
        lines += diff_lines(by_form(a[workload]), by_form(b[workload]), most)
        lines.append(f"{workload}: per function and form")
        lines += diff_lines(a[workload], b[workload], most)
    return "\n".join(lines)


def diff_lines(a: Counter[str], b: Counter[str], most: int) -> list[str]:
    """The ``most`` keys whose counts differ most from a to b (by at least 0.5)."""
    delta = Counter(b)
    delta.subtract(a)
    return [
        f"  {value:+8.1f}  {name}"
        for name, value in sorted(delta.items(), key=lambda kv: -abs(kv[1]))[:most]
        if abs(value) >= 0.5
    ]


RATIOS = (("on", "off"), ("counters", "off"), ("off", "before"), ("counters", "before"))


def table(figures: dict[str, dict[str, float]], unit: str) -> str:
    """Markdown: per workload, each configuration's figure per message and the ratios."""
    names = list(figures)
    ratios = [(a, b) for a, b in RATIOS if a in figures and b in figures]
    lines = [
        "| workload | "
        + " | ".join(names)
        + " | "
        + " | ".join(f"{a}/{b}" for a, b in ratios)
        + " |",
        "| --- | " + " | ".join("---:" for _ in names + ratios) + " |",
    ]
    for workload in figures[names[0]]:
        cells = [f"{figures[n][workload]:,.1f}" for n in names]
        cells += [f"{figures[a][workload] / figures[b][workload]:.3f}" for a, b in ratios]
        lines.append(f"| {workload} ({unit}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab.broker_work", description=__doc__
    )
    parser.add_argument("--before", type=Path, help="an older checkout to compare with")
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--callgrind", action="store_true", help="also count instructions")
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"), help="per-function bytecodes")
    parser.add_argument(
        "--adaptive",
        nargs=2,
        metavar=("A", "B"),
        help="executions per specialised instruction form (CPython 3.11's quickening)",
    )
    args = parser.parse_args(argv)
    n = args.messages
    with configurations(args.before) as found:
        counted = {
            name: opcodes(tree, mode, n, first) for name, (tree, mode, first) in found.items()
        }
        print(
            table(
                {k: {w: sum(c.values()) for w, c in v.items()} for k, v in counted.items()},
                "bytecodes/msg",
            )
        )
        if args.callgrind:
            if not instructions.available():
                parser.error("valgrind's callgrind is needed (Debian: apt-get install valgrind)")
            with ThreadPoolExecutor(len(found)) as pool:  # counts do not feel the load
                started = {
                    name: pool.submit(callgrind, tree, mode, n, first)
                    for name, (tree, mode, first) in found.items()
                }
                rounds = {name: future.result() for name, future in started.items()}
            for name, per in rounds.items():
                print(
                    f"{name}: spread over rounds "
                    + ", ".join(f"{w} {instructions.spread(v):.2%}" for w, v in per.items()),
                    file=sys.stderr,
                )
            print(
                table(
                    {k: {w: v[-1] for w, v in per.items()} for k, per in rounds.items()},
                    "instr/msg",
                )
            )
        if args.diff:
            print(diff(counted[args.diff[0]], counted[args.diff[1]]))
        if args.adaptive:
            forms = [
                opcodes(*found[name][:2], n, found[name][2], measure="adaptive")
                for name in args.adaptive
            ]
            before, after = forms
            print(adaptive_diff(before, after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
