"""kill -9 of a process journaling persistent messages: after recovery every confirmed
message is there exactly once and in order, and no message whose ack was on disk is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.store import Store
from tests.store.conftest import declare_queues
from tests.store.messages import recovered_bodies

REPO = Path(__file__).resolve().parents[2]


def run_and_kill(data_dir: Path, queue_ids: list[int], ack: bool, confirms: int) -> list[str]:
    """Start the writer, kill -9 it once ``confirms`` lines were printed; all lines printed."""
    args = [sys.executable, "-m", "tests.store.crash_writer", str(data_dir)]
    args += [str(q) for q in queue_ids] + (["--ack"] if ack else [])
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while len(lines) < confirms and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    os.kill(proc.pid, signal.SIGKILL)
    lines += proc.stdout.readlines()
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert not any(line.startswith("FAILED") for line in lines), lines[-1]
    assert len(lines) >= confirms, "the writer did not confirm enough before the deadline"
    return lines


def by_queue(lines: list[str], kind: str, queue_ids: list[int]) -> dict[int, set[int]]:
    seqs: dict[int, set[int]] = {q: set() for q in queue_ids}
    for line in lines:
        if not line.endswith("\n"):
            continue  # cut by the kill mid-write: its event was never reported
        k, q, seq = line.split()
        if k == kind:
            seqs[int(q)].add(int(seq))
    return seqs


@pytest.mark.parametrize("ack", [False, True], ids=["publishing", "publishing-and-acking"])
def test_confirmed_messages_survive_kill_9_exactly_once_in_order(data_dir: Path, ack: bool) -> None:
    queue_ids = list(declare_queues(data_dir, ["q1", "q2", "q3"]).values())
    lines = run_and_kill(data_dir, queue_ids, ack, confirms=30_000)
    confirmed = by_queue(lines, "C", queue_ids)
    acked = by_queue(lines, "A", queue_ids)  # acks on disk: these must not come back
    ack_requested = by_queue(lines, "R", queue_ids)  # acks handed over: these may be gone

    store = Store.open(data_dir)
    try:
        for q in queue_ids:
            seqs = [int(body) for body in recovered_bodies(store, q)]
            assert seqs == sorted(set(seqs)), "out of order or duplicated"
            assert not acked[q] & set(seqs), "a message whose ack was on disk came back"
            assert acked[q] <= ack_requested[q]
            missing = confirmed[q] - ack_requested[q] - set(seqs)
            assert not missing, f"{len(missing)} confirmed messages lost in queue {q}"
        if ack:
            assert any(acked.values())
    finally:
        store.close()
