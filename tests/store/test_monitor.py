"""When publishers are blocked: memory and disk limits, with hysteresis."""

from __future__ import annotations

from pathlib import Path

from broker.store import ResourceMonitor


def test_memory_alarm_sets_at_the_limit_and_clears_below_it_with_hysteresis() -> None:
    rss = [0]
    monitor = ResourceMonitor(memory_limit=1000, rss=lambda: rss[0])
    states = []
    for used in (500, 1000, 950, 899, 999):
        rss[0] = used
        states.append(monitor.check() is not None)
    assert states == [False, True, True, False, False]


def test_disk_alarm_names_the_directory(tmp_path: Path) -> None:
    free = [10]
    monitor = ResourceMonitor(
        memory_limit=1 << 60, disk_path=tmp_path, disk_free_limit=100, free=lambda _: free[0]
    )
    reason = monitor.check()
    assert reason is not None and str(tmp_path) in reason
    free[0] = 105
    assert monitor.check() is not None
    free[0] = 111
    assert monitor.check() is None


def test_real_readings_are_taken_without_alarm(tmp_path: Path) -> None:
    assert ResourceMonitor(disk_path=tmp_path, disk_free_limit=1).check() is None
