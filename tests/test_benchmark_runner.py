"""The benchmark runner's tables: what the README's benchmark table is rendered from."""

from __future__ import annotations

import json

from benchmarks.run import format_markdown, format_table, from_json, to_json

RESULTS = {
    "codec": (
        [
            {
                "figure": "encode",
                "unit": "msg/s",
                "ours": 150_000.0,
                "reference": 50_000.0,
                "reference_name": "pamqp",
            },
            {
                "figure": "recover",
                "unit": "s",
                "ours": 1.5,
                "reference": None,
                "reference_name": "",
            },
        ],
        None,
    ),
    "broken": ([], "RuntimeError: no broker"),
}


def test_markdown_table_has_a_row_per_figure_with_its_ratio_and_shows_failures() -> None:
    lines = format_markdown(RESULTS).splitlines()  # type: ignore[arg-type]
    assert lines[0] == "| figure | ours | reference | reference name | ratio | unit |"
    assert lines[2] == "| encode | 150,000 | 50,000 | pamqp | 3.00x | msg/s |"
    assert lines[3] == "| recover | 1.5 | - | - | - | s |"
    assert lines[4].startswith("| broken: FAILED | RuntimeError: no broker |")


def test_a_run_written_as_json_renders_the_same_table() -> None:
    data = json.loads(json.dumps(to_json(RESULTS, quick=True)))  # type: ignore[arg-type]
    assert format_table(from_json(data)) == format_table(RESULTS)  # type: ignore[arg-type]
