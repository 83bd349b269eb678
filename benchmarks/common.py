"""Helpers shared by the ``bench_*`` modules: rate measurement and the row type."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypedDict

#: Seconds each measured figure runs for, at least (``--quick`` uses the smaller one).
MIN_SECONDS = 1.0
MIN_SECONDS_QUICK = 0.2


class Row(TypedDict):
    """One line of the benchmark table: a figure measured for us and for a reference."""

    figure: str
    unit: str
    ours: float
    reference: float | None
    reference_name: str


def min_seconds(quick: bool) -> float:
    return MIN_SECONDS_QUICK if quick else MIN_SECONDS


def rate(operation: Callable[[], object], min_time: float, batch: int = 100) -> float:
    """Calls of ``operation`` per second, timed with ``perf_counter`` over at least ``min_time``.

    The operation runs in batches of ``batch`` calls (so the clock is read rarely); batches
    repeat until ``min_time`` has passed. One untimed batch first warms caches up.
    """
    for _ in range(batch):
        operation()
    calls = 0
    start = time.perf_counter()
    elapsed = 0.0
    while elapsed < min_time:
        for _ in range(batch):
            operation()
        calls += batch
        elapsed = time.perf_counter() - start
    return calls / elapsed


def compare(
    ours: Callable[[], object],
    reference: Callable[[], object],
    min_time: float,
    rounds: int = 3,
) -> tuple[float, float]:
    """Best rates of ``ours`` and ``reference`` over ``rounds`` alternating measurements.

    Alternating and keeping the best of each makes the ratio robust to load from other
    processes, which only ever slows a measurement down.
    """
    best_ours = best_reference = 0.0
    for _ in range(rounds):
        best_ours = max(best_ours, rate(ours, min_time / rounds))
        best_reference = max(best_reference, rate(reference, min_time / rounds))
    return best_ours, best_reference


def row(
    figure: str, unit: str, ours: float, reference: float | None = None, reference_name: str = ""
) -> Row:
    return Row(
        figure=figure, unit=unit, ours=ours, reference=reference, reference_name=reference_name
    )
