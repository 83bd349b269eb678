"""The over-sockets A/B harness (``benchmarks/ab/broker_ab.py``): each round's figures are divided
by the reference broker's of the same round, and the table reports their median and quartiles."""

from __future__ import annotations

import pytest

from benchmarks.ab.broker_ab import Round, ratios, summary, table


def _round(before: float, again: float, after: float) -> Round:
    """One round of one scenario: CPU µs per message (rates: 1e6 / CPU)."""
    return {
        name: {"publish, no confirms, 1q": (cpu, 1e6 / cpu)}
        for name, cpu in (("before", before), ("before again", again), ("after", after))
    }


def test_each_round_is_divided_by_the_reference_of_the_same_round() -> None:
    # The reference drifts 2x between rounds; the paired ratios do not.
    measured = [_round(10, 10, 11), _round(20, 20, 22), _round(15, 15, 16.5), _round(12, 12, 13.2)]
    assert ratios(measured, "after", "publish, no confirms, 1q", 0) == pytest.approx([1.1] * 4)
    by_rate = ratios(measured, "after", "publish, no confirms, 1q", 1)
    assert by_rate == pytest.approx([1 / 1.1] * 4)


def test_the_table_gives_median_and_quartiles_of_each_configuration() -> None:
    measured = [_round(10, cpu, 10 * r) for cpu, r in ((9, 1.0), (10, 1.1), (11, 1.2), (10, 1.3))]
    assert summary([1.0, 1.1, 1.2, 1.3]) == "1.150 (1.075-1.225)"
    rows = table(measured).splitlines()
    assert rows[0] == (
        "| scenario | before: CPU µs/msg, msg/s | before again: CPU / rate | after: CPU / rate |"
    )
    assert rows[2].startswith("| publish, no confirms, 1q | 10.0, 100,000 | 1.000 (0.975-1.025)")
    # rates of the after broker: 1/1.0, 1/1.1, 1/1.2, 1/1.3 of the reference's
    assert rows[2].endswith("| 1.150 (1.075-1.225) / 0.871 (0.817-0.932) |")
    assert rows[-1] == "| geometric mean of the medians | | 1.000 / 1.000 | 1.150 / 0.871 |"
