"""pytest plugin: tests claim spec rules with ``@pytest.mark.spec_rule(id, ...)`` (AMQP 0-9)
and ``@pytest.mark.spec010_rule(id, ...)`` (the transitional 0-10 draft).

It refuses ids the spec does not have (a typo must not count as coverage) and, with
``--conformance-json PATH``, records every claiming test's outcome for the reports, under
its spec file's name. ``--conformance-claims PATH`` writes the rule ids the collected tests
claim, by spec file (``test_reports.py`` compares them with the checked-in reports).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .catalog import SPECS, rules

_OUTCOMES_KEY = pytest.StashKey[dict[str, dict[str, dict[str, Any]]]]()


def claimed(item: pytest.Item, marker: str) -> list[str]:
    """The rule ids ``item`` claims with ``marker``."""
    return [rule_id for mark in item.iter_markers(marker) for rule_id in mark.args]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--conformance-json",
        default=None,
        help="write the outcome of every test that claims a spec rule to this JSON file",
    )
    parser.addoption(
        "--conformance-claims",
        default=None,
        help="write the rule ids the collected tests claim, by spec file, to this JSON file",
    )


def pytest_configure(config: pytest.Config) -> None:
    for spec, marker in SPECS.items():
        config.addinivalue_line(
            "markers", f"{marker}(*ids): the test checks these rules of {spec} (class.method:name)"
        )
    config.stash[_OUTCOMES_KEY] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    claims: dict[str, set[str]] = {}
    for spec, marker in SPECS.items():
        known = rules(spec)
        claims[spec] = set()
        for item in items:
            ids = claimed(item, marker)
            unknown = [rule_id for rule_id in ids if rule_id not in known]
            if unknown:
                raise pytest.UsageError(
                    f"{item.nodeid} claims rules {spec} does not have: {unknown}"
                )
            claims[spec].update(ids)
    path = config.getoption("--conformance-claims")
    if path:
        Path(path).write_text(json.dumps({spec: sorted(ids) for spec, ids in claims.items()}))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    for spec, marker in SPECS.items():
        ids = claimed(item, marker)
        if ids and (report.when == "call" or report.outcome != "passed"):
            outcomes = item.config.stash[_OUTCOMES_KEY].setdefault(spec, {})
            previous = outcomes.get(item.nodeid)
            # A failure in any phase wins over a pass in another.
            if previous is None or previous["outcome"] == "passed":
                outcomes[item.nodeid] = {"rules": ids, "outcome": report.outcome}
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--conformance-json")
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(
            json.dumps(session.config.stash[_OUTCOMES_KEY], indent=1, sort_keys=True)
        )
