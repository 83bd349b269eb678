"""The checked-in conformance reports against the tests and ``not_applicable.toml``.

Which rules the suite claims is found by collecting (not running) the test modules that
can claim one, so a test that claims a new rule (or drops one) without the reports being
written again by ``scripts/conformance.sh`` fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .catalog import SPECS, rules
from .report import REPORTS, Report, not_applicable

TESTS = Path(__file__).parents[1]
DOCS = TESTS.parent / "docs"
_ROW = re.compile(r"^\| `(?P<id>[^`]+)` \| [^|]* \| [^|]* \| (?P<status>[a-z ]+) \|")


def _modules_that_can_claim() -> list[Path]:
    """Test modules that name a claiming marker, or import a helper module that does (such
    as tests/spec09/dialects.py): more than claim one is harmless, only slower."""
    sources = {path: path.read_text() for path in TESTS.rglob("*.py")}

    def names_a_marker(text: str) -> bool:
        return any(marker in text for marker in SPECS.values())

    helpers = [
        path.stem
        for path, text in sources.items()
        if not path.name.startswith("test_") and path.name != "conftest.py" and names_a_marker(text)
    ]
    return sorted(
        path
        for path, text in sources.items()
        if path.name.startswith("test_")
        and (
            names_a_marker(text)
            or any(f"import {h}" in text or f".{h} import" in text for h in helpers)
        )
    )


def _claimed(tmp: Path) -> dict[str, set[str]]:
    out = tmp / "claims.json"
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [*collect, "--conformance-claims", str(out), *map(str, _modules_that_can_claim())],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {spec: set(ids) for spec, ids in json.loads(out.read_text()).items()}


@pytest.fixture(scope="module")
def claimed_by_spec(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """The rule ids the test modules claim, by spec file."""
    return _claimed(tmp_path_factory.mktemp("claims"))


def _statuses(report: Report) -> dict[str, str]:
    text = (DOCS / report.file_name).read_text()
    return {m["id"]: m["status"] for m in map(_ROW.match, text.splitlines()) if m}


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.spec)
def test_the_checked_in_report_lists_every_rule_once(report: Report) -> None:
    assert list(_statuses(report)) == list(rules(report.spec))


@pytest.mark.slow  # collects the claiming test modules in a subprocess
@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.spec)
def test_the_checked_in_report_has_a_result_for_exactly_the_claimed_rules(
    report: Report, claimed_by_spec: dict[str, set[str]]
) -> None:
    with_tests = {
        rule_id for rule_id, status in _statuses(report).items() if status in ("passed", "failed")
    }
    assert with_tests == claimed_by_spec[report.spec], (
        "run `bash scripts/conformance.sh` to write the report again"
    )


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
def test_every_not_applicable_rule_exists_and_no_test_claims_it(
    spec: str, claimed_by_spec: dict[str, set[str]]
) -> None:
    reasons = not_applicable(spec)
    assert set(reasons) <= set(rules(spec))
    assert not set(reasons) & claimed_by_spec[spec]
