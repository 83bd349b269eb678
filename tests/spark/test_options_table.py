"""An option is declared once: that declaration parses it, words its errors and makes its row
of the options tables of the README and docs/, which must match the declarations."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from amqp_spark.options import (
    OptionError,
    Requires,
    declared_options,
    integers,
    one_of,
    option,
    options_table,
    parse_options,
)
from amqp_spark.sink.settings import SinkSettings
from amqp_spark.source.options import SourceOptions

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "options_table.py"


@dataclass(frozen=True)
class Declared:
    mode: str = option("mode", one_of(("fast", "safe")), default="safe", doc="how to go")
    depth: int | None = option(
        "depth", integers(1, 9), doc="how deep", requires=Requires("mode", ("fast",), "why")
    )


def parse(**raw: str) -> Declared:
    values, _ = parse_options(raw, declared_options(Declared), side="test")
    return Declared(**values)


def test_one_declaration_parses_the_option_and_applies_its_default() -> None:
    assert parse(MODE="Fast", depth="3") == Declared("fast", 3)
    assert parse() == Declared("safe", None)


@pytest.mark.parametrize(
    ("raw", "named", "message"),
    [
        ({"depth": "10", "mode": "fast"}, "depth", "got '10'; accepted: an integer >= 1 and <= 9"),
        ({"mode": "slow"}, "mode", "got 'slow'; accepted: fast or safe"),
        ({"depth": "3"}, "depth", "got '3'; accepted: only with mode 'fast'. why"),
        ({"dept": "3"}, "dept", "did you mean 'depth'?"),
    ],
)
def test_one_declaration_words_the_errors(raw: dict[str, str], named: str, message: str) -> None:
    with pytest.raises(OptionError) as caught:
        parse(**raw)
    assert caught.value.option == named
    assert message in str(caught.value)


def test_one_declaration_makes_the_table_row() -> None:
    assert options_table(Declared).splitlines()[2:] == [
        "| `mode` | `safe` | how to go |",
        "| `depth` | – | how deep |",
    ]


@pytest.mark.parametrize("settings", [SourceOptions, SinkSettings])
def test_every_declared_option_has_a_documented_row(settings: type) -> None:
    declared = declared_options(settings).values()
    rows = options_table(settings).splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == [opt.name for opt in declared]
    assert all(opt.doc for opt in declared)


def test_the_options_tables_of_readme_and_docs_are_made_from_the_declarations() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_check_fails_on_a_stale_row(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    stale = text.replace("| `pollTimeoutMs` | `2000` |", "| `pollTimeoutMs` | `500` |")
    assert stale != text
    readme.write_text(stale, encoding="utf-8")

    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(readme)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert "-| `pollTimeoutMs` | `500` |" in done.stdout
    assert "+| `pollTimeoutMs` | `2000` |" in done.stdout
