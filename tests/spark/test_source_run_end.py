"""The end of a query run at Spark's SIGTERM (``amqp_spark.source.run_end``): a signal that
lands inside a call of the reader ends the run when that call returns, never inside it, and
a runner whose end does not finish is killed after the grace period, so that it cannot keep
its consumers (issue 36)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import pytest

from amqp_spark.source.run_end import RunEnd

ROOT = Path(__file__).resolve().parents[2]


def test_a_sigterm_inside_a_call_ends_the_run_once_when_the_call_returns() -> None:
    events: list[str] = []

    def before(signum: int, frame: FrameType | None) -> None:
        events.append("previous handler")

    def inside() -> None:  # a Python call: the handler runs at its start at the latest
        events.append("inside the call")

    previous = signal.signal(signal.SIGTERM, before)
    try:
        run_end = RunEnd()
        run_end.install(lambda: events.append("stop"))
        with run_end.call():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)  # Spark sends it twice
            inside()
        inside()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert events == ["inside the call", "stop", "previous handler", "inside the call"]


def test_a_sigterm_between_calls_ends_the_run_at_once() -> None:
    events: list[str] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: events.append("previous"))
    try:
        run_end = RunEnd()
        run_end.install(lambda: events.append("stop"))
        os.kill(os.getpid(), signal.SIGTERM)
        events.append("after the signal")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert events == ["stop", "previous", "after the signal"]


def test_a_run_end_that_fails_still_passes_the_signal_on() -> None:
    passed_on: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: passed_on.append(signum))

    def failing_stop() -> None:
        raise RuntimeError("the broker went away")

    try:
        RunEnd().install(failing_stop)
        with pytest.raises(RuntimeError, match="went away"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0)  # a call: the handler has run by its end
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert passed_on == [signal.SIGTERM]


RUNNER = """
import sys, time
from amqp_spark.source.run_end import RunEnd
run_end = RunEnd(grace=float(sys.argv[1]))
run_end.install(lambda: time.sleep(float(sys.argv[2])))  # the run's end: acks, close
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize(
    ("stop_seconds", "ended_by"),
    [(0.0, signal.SIGTERM), (120.0, signal.SIGKILL)],
    ids=["end-finishes", "end-hangs"],
)
def test_the_runner_ends_within_the_grace_period_after_sigterm(
    stop_seconds: float, ended_by: signal.Signals
) -> None:
    """The process is ended by the signal once the run's end is done; a run's end that
    hangs (a lock held forever) is cut short by SIGKILL after the grace period."""
    runner = subprocess.Popen(
        [sys.executable, "-c", RUNNER, "1.0", str(stop_seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert runner.stdout is not None and runner.stdout.readline() == "ready\n"
        sent = time.monotonic()
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=30) == -ended_by
        assert time.monotonic() - sent < 15
    finally:
        runner.kill()
        runner.wait()
