"""The check that a test using the ``spark`` fixture carries the ``spark`` mark
(tests/support/spark_mark.py), run on a throwaway test directory."""

from __future__ import annotations

import pytest

_CONFTEST = """
import pytest

@pytest.fixture
def spark():
    return "a session"
"""


def test_an_unmarked_test_using_the_spark_fixture_fails_the_run_whatever_the_mark_filter(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(
        test_uses="""
        import pytest

        @pytest.mark.spark
        def test_marked(spark):
            pass

        def test_unmarked(spark):
            pass

        def test_without_spark():
            pass
        """
    )
    result = pytester.runpytest("-p", "tests.support.spark_mark", "-m", "not spark")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*lack @pytest.mark.spark: test_uses.py::test_unmarked"])


def test_marked_tests_and_tests_without_spark_pass_the_check(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(
        test_uses="""
        import pytest

        pytestmark = pytest.mark.spark

        def test_marked_by_module(spark):
            pass
        """,
        test_plain="""
        def test_without_spark():
            pass
        """,
    )
    result = pytester.runpytest("-p", "tests.support.spark_mark", "-m", "not spark")
    result.assert_outcomes(passed=1, deselected=1)
