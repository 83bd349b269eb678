"""Run the benchmarks and print one table: ``python -m benchmarks.run [--quick] [--only NAME ...]
[--markdown PATH]``; ``--render JSON`` prints an earlier run's results as Markdown.

Every ``benchmarks/bench_<topic>.py`` module exposes ``run(quick: bool) -> list[Row]``. The
runner imports each, runs it, prints all rows in one table (with the ratio ours/reference) and
writes them as JSON. A module that fails shows its error in the table and makes the runner
exit non-zero once every other module has run, so a broken benchmark cannot go unnoticed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Row

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "results" / "latest.json"
_COLUMNS = ("figure", "ours", "reference", "reference name", "ratio", "unit")


def discover() -> list[str]:
    """Topic names of the benchmark modules, sorted: ``bench_codec.py`` -> ``codec``."""
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def run_module(topic: str, quick: bool) -> tuple[list[Row], str | None]:
    """The rows of one module, or no rows and the error it raised."""
    try:
        module = importlib.import_module(f"benchmarks.bench_{topic}")
        return list(module.run(quick)), None
    except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
        traceback.print_exc(file=sys.stderr)
        return [], f"{type(exc).__name__}: {exc}"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def _cells(results: dict[str, tuple[list[Row], str | None]]) -> list[list[str]]:
    """One list of cells per row (the header first), as both table formats show them."""
    lines: list[list[str]] = [list(_COLUMNS)]
    for topic, (rows, error) in results.items():
        if error is not None:
            lines.append([f"{topic}: FAILED", error, "", "", "", ""])
        for r in rows:
            ref = r["reference"]
            ratio = f"{r['ours'] / ref:.2f}x" if ref else "-"
            lines.append(
                [
                    r["figure"],
                    _number(r["ours"]),
                    _number(ref),
                    r["reference_name"] or "-",
                    ratio,
                    r["unit"],
                ]
            )
    return lines


def format_table(results: dict[str, tuple[list[Row], str | None]]) -> str:
    lines = _cells(results)
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS))]
    numeric = {1, 2, 4}
    out = []
    for n, line in enumerate(lines):
        cells = [
            cell.rjust(w) if i in numeric and n else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def format_markdown(results: dict[str, tuple[list[Row], str | None]]) -> str:
    """The same table in Markdown, for docs/measurements."""
    header, *rows = _cells(results)
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def from_json(data: dict[str, Any]) -> dict[str, tuple[list[Row], str | None]]:
    """The results of an earlier run, as written by ``to_json``."""
    return {topic: (entry["rows"], entry["error"]) for topic, entry in data["benchmarks"].items()}


def to_json(results: dict[str, tuple[list[Row], str | None]], quick: bool) -> dict[str, Any]:
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "quick": quick,
        "benchmarks": {
            topic: {"rows": rows, "error": error} for topic, (rows, error) in results.items()
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter measurements")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="topics to run (codec or bench_codec)"
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    parser.add_argument(
        "--markdown", type=Path, help="also write the table in Markdown (as in docs/measurements)"
    )
    parser.add_argument(
        "--render", type=Path, metavar="JSON", help="print an earlier run's JSON as Markdown"
    )
    args = parser.parse_args(argv)
    if args.render:
        print(format_markdown(from_json(json.loads(args.render.read_text()))))
        return 0

    topics = discover()
    if args.only:
        wanted = [name.removeprefix("bench_").removesuffix(".py") for name in args.only]
        unknown = sorted(set(wanted) - set(topics))
        if unknown:
            parser.error(f"no benchmark named {', '.join(unknown)}; there are {', '.join(topics)}")
        topics = [t for t in topics if t in wanted]

    results = {}
    for topic in topics:
        print(f"running {topic} ...", file=sys.stderr, flush=True)
        results[topic] = run_module(topic, args.quick)
    print(format_table(results))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(to_json(results, args.quick), indent=2) + "\n")
    print(f"results written to {args.json}", file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(format_markdown(results) + "\n")
    failed = [topic for topic, (_, error) in results.items() if error is not None]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
