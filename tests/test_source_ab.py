"""The source's before/after harness (``benchmarks/ab/source_ab.py``): pairs of runs, reported
as each tree's medians and spreads and the median of the per-pair ratios."""

from __future__ import annotations

from typing import Any

from benchmarks.ab.source_ab import figures, table


def _run(rate: float, broker: float) -> dict[str, Any]:
    cpu = {"broker": broker, "jvm": 27.0, "runner": 30.0, "executors": 3.0, "driver": 2.0}
    return {"rows_per_s": rate, "cpu_s_per_million": cpu}


def test_the_driver_which_only_waits_is_left_out_of_the_cpu_in_all() -> None:
    assert figures(_run(1000, 20.0)) == {
        "rows/s": 1000.0,
        "broker": 20.0,
        "jvm": 27.0,
        "runner": 30.0,
        "executors": 3.0,
        "CPU in all": 80.0,
    }


def test_ratios_are_of_runs_of_the_same_pair_and_spreads_of_each_trees_runs() -> None:
    pairs = [
        {"before": _run(20_000, 20.0), "after": _run(19_000, 20.0)},
        {"before": _run(10_000, 25.0), "after": _run(9_800, 25.0)},
        {"before": _run(16_000, 20.0), "after": _run(15_000, 20.0)},
    ]
    rows = table(pairs).splitlines()
    # pair ratios 0.95, 0.98, 0.9375: median 0.95, though the medians' ratio is 15,000/16,000
    assert rows[2] == "| rows/s | 16,000.0 | 15,000.0 | 0.950 | 100.0% / 93.9% |"
    assert rows[3] == "| broker | 20.0 | 20.0 | 1.000 | 25.0% / 25.0% |"


def test_a_phase_that_rounds_to_zero_in_a_run_has_no_spread_and_no_ratio_from_it() -> None:
    before, after = _run(20_000, 20.0), _run(19_000, 20.0)
    before["phases_s"], after["phases_s"] = {"getBatch": 0.0}, {"getBatch": 0.01}
    rows = table([{"before": before, "after": after}]).splitlines()
    assert rows[-1] == "| phase: getBatch (s) | 0.0 | 0.0 | - | - / 0.0% |"
