"""The checked-in conformance reports against the tests and ``not_applicable.toml``.

Cheap checks that need no test run: which rules the suite claims is read from the test
files' source, so a test that claims a new rule (or drops one) without the report being
written again by ``scripts/conformance.sh`` fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from .catalog import SPECS, rules
from .report import REPORTS, Report, not_applicable

TESTS = Path(__file__).parents[1]
DOCS = TESTS.parent / "docs"
_ROW = re.compile(r"^\| `(?P<id>[^`]+)` \| [^|]* \| [^|]* \| (?P<status>[a-z ]+) \|")


def _claimed_in_source(marker: str) -> set[str]:
    """Rule ids passed to ``pytest.mark.<marker>(...)`` anywhere under tests/: directly, or
    through a module-level alias of the marker (``rule = pytest.mark.spec_rule``) and
    module-level string constants (``RULE = "..."``)."""
    claimed: set[str] = set()
    for path in TESTS.rglob("*.py"):
        module = ast.parse(path.read_text(), str(path))
        aliases, strings = _module_names(module, marker)
        for node in ast.walk(module):
            if isinstance(node, ast.Call) and _is_marker(node.func, marker, aliases):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        claimed.add(arg.value)
                    elif isinstance(arg, ast.Name) and arg.id in strings:
                        claimed.add(strings[arg.id])
                    else:
                        raise AssertionError(
                            f"{path}:{arg.lineno}: a rule id this test cannot read"
                        )
    return claimed


def _module_names(module: ast.Module, marker: str) -> tuple[set[str], dict[str, str]]:
    aliases: set[str] = set()
    strings: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                continue
            if isinstance(node.value, ast.Attribute) and node.value.attr == marker:
                aliases.add(target.id)
            elif isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                strings[target.id] = node.value.value
    return aliases, strings


def _is_marker(func: ast.expr, marker: str, aliases: set[str]) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == marker
    return isinstance(func, ast.Name) and func.id in aliases


def _statuses(report: Report) -> dict[str, str]:
    text = (DOCS / report.file_name).read_text()
    return {m["id"]: m["status"] for m in map(_ROW.match, text.splitlines()) if m}


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.spec)
def test_the_checked_in_report_lists_every_rule_once(report: Report) -> None:
    assert list(_statuses(report)) == list(rules(report.spec))


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.spec)
def test_the_checked_in_report_has_a_result_for_exactly_the_claimed_rules(
    report: Report,
) -> None:
    with_tests = {
        rule_id for rule_id, status in _statuses(report).items() if status in ("passed", "failed")
    }
    assert with_tests == _claimed_in_source(SPECS[report.spec]), (
        "run `bash scripts/conformance.sh` to write the report again"
    )


@pytest.mark.parametrize("spec", SPECS)
def test_every_not_applicable_rule_exists_and_no_test_claims_it(spec: str) -> None:
    reasons = not_applicable(spec)
    assert set(reasons) <= set(rules(spec))
    assert not set(reasons) & _claimed_in_source(SPECS[spec])
