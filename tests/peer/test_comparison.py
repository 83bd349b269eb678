"""The peer-suite harness's verdict: a test that passes on RabbitMQ and fails on the bundled
broker fails the run unless expected-differences.txt lists it with a reason; junit outcomes
and the RabbitMQ 4 baseline are read as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peer import suites
from tests.peer.suites import Results, read_baseline, read_expected, read_junit, report

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok" time="0.1"/>
<testcase classname="tests.test_a" name="test_bad" time="0.1"><failure message="x"/></testcase>
<testcase classname="tests.test_a" name="test_broken" time="0.1"><error message="x"/></testcase>
<testcase classname="tests.test_a" name="test_skip" time="0.1"><skipped message="x"/></testcase>
</testsuite></testsuites>
"""


def _results(**outcomes: str) -> Results:
    return Results(outcomes={f"tests.t::{name}": o for name, o in outcomes.items()})


def test_junit_failures_and_errors_count_as_failed_and_skips_as_skipped(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(JUNIT)
    assert read_junit(path).outcomes == {
        "tests.test_a::test_ok": "passed",
        "tests.test_a::test_bad": "failed",
        "tests.test_a::test_broken": "failed",
        "tests.test_a::test_skip": "skipped",
    }


def test_a_test_passing_on_rabbitmq_and_failing_here_fails_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = {
        ("s-1", "bundled"): _results(a="passed", b="failed", c="failed"),
        ("s-1", "rabbitmq"): _results(a="passed", b="passed", c="failed"),
    }
    assert report(results, expected={}) == 1
    assert "s-1 tests.t::b" in capsys.readouterr().out


def test_an_expected_difference_does_not_fail_the_run() -> None:
    results = {
        ("s-1", "bundled"): _results(b="failed"),
        ("s-1", "rabbitmq (baseline)"): _results(b="passed"),
    }
    assert report(results, expected={"s-1 tests.t::b": "a documented reason"}) == 0


def test_a_suite_without_results_fails_the_run() -> None:
    results = {("s-1", "bundled"): Results(problem="no results")}
    assert report(results, expected={}) == 2


def test_an_expected_difference_without_a_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "expected.txt"
    path.write_text("# comment\ns-1 tests.t::b\n")
    with pytest.raises(SystemExit, match="needs '# reason'"):
        read_expected(path)


def test_the_committed_files_read() -> None:
    assert read_expected(suites.EXPECTED_FILE) == {}
    recorded = read_baseline(suites.BASELINE_FILE)
    assert set(recorded) == {suite.key for suite in suites.SUITES.values()}
    assert all(r.count("passed") > 200 for r in recorded.values())
