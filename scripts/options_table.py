"""The options tables of the README and the docs, made from the options' declarations.

    .venv/bin/python scripts/options_table.py          # rewrite them
    .venv/bin/python scripts/options_table.py --check  # exit 1, with a diff, if one differs

A table follows a line ``<!-- options table: <module>.<class> ... -->`` (or ``<!-- detailed
options table: ...``, the longer meanings of docs/) naming the dataclass that declares the
options (``amqp_spark.options.option``); it runs to the first line that is not a table row.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!-- (detailed )?options table: ([\w.]+)\.(\w+)\b.*-->")
DOCUMENTS = ("README.md", "docs/source.md", "docs/sink.md")


def with_tables(text: str) -> str:
    """``text`` with the table after every marker made again from its declarations."""
    sys.path.insert(0, str(ROOT))
    from amqp_spark.options import options_table

    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        found = MARKER.search(lines[i])
        i += 1
        if found is None:
            continue
        settings = getattr(importlib.import_module(found[2]), found[3])
        out.append(options_table(settings, detailed=bool(found[1])))
        while i < len(lines) and lines[i].startswith("|"):
            i += 1
    return "".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    parser.add_argument(
        "documents", nargs="*", type=Path, default=[ROOT / name for name in DOCUMENTS]
    )
    args = parser.parse_args()
    stale = 0
    for document in args.documents:
        text = document.read_text(encoding="utf-8")
        made = with_tables(text)
        if made == text:
            continue
        if args.check:
            lines, made_lines = text.splitlines(keepends=True), made.splitlines(keepends=True)
            sys.stdout.writelines(difflib.unified_diff(lines, made_lines, str(document), "made"))
            print(f"{document}: options tables differ from the declarations; rerun {__file__}")
            stale += 1
        else:
            document.write_text(made, encoding="utf-8")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
