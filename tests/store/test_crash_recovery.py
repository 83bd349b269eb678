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
from broker.store.journal import CRASH_IN_COMPACTION_ENV
from testbed.store_data import declare_queues, recovered_bodies
from tests.store.listeners import CollectingListener

REPO = Path(__file__).resolve().parents[2]


def run_and_kill(
    data_dir: Path,
    queue_ids: list[int],
    ack: bool,
    confirms: int | None,
    mode: str | None = None,
    env: dict[str, str] | None = None,
) -> list[str]:
    """Start the writer (``--ack`` with ``ack``, or ``mode``), kill -9 it once ``confirms``
    lines were printed (None: wait until it kills itself, as ``env`` makes it); all lines
    printed."""
    args = [sys.executable, "-m", "tests.store.crash_writer", str(data_dir)]
    args += [str(q) for q in queue_ids] + (["--ack"] if ack else []) + ([mode] if mode else [])
    proc = subprocess.Popen(
        args, cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    ended = False
    while (confirms is None or len(lines) < confirms) and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            ended = True
            break
        lines.append(line)
    assert confirms is not None or ended, "the writer did not die by itself before the deadline"
    os.kill(proc.pid, signal.SIGKILL)
    lines += proc.stdout.readlines()
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert not any(line.startswith("FAILED") for line in lines), lines[-1]
    assert len(lines) >= (confirms or 0), "the writer did not confirm enough before the deadline"
    return lines


def check_recovery(data_dir: Path, lines: list[str], queue_ids: list[int]) -> None:
    """After the writer's kill: every confirmed message whose ack was not requested is there
    exactly once, in order, and none whose ack was on disk is."""
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
    finally:
        store.close()


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
    check_recovery(data_dir, lines, queue_ids)
    if ack:
        assert any(by_queue(lines, "A", queue_ids).values())


@pytest.mark.parametrize("point", ["torn", "written"])
def test_a_kill_9_in_the_middle_of_a_compaction_loses_and_repeats_nothing(
    data_dir: Path, point: str
) -> None:
    """The writer kills itself in its first compaction: half-way through writing the MOVED
    copies ("torn"), or once they are fsync'd but the old segment is still there
    ("written"). Recovery must find each message once; the next broker finishes the job."""
    queue_ids = list(declare_queues(data_dir, ["q1", "q2"]).values())
    env = {CRASH_IN_COMPACTION_ENV: point}
    lines = run_and_kill(data_dir, queue_ids, False, None, mode="--sparse", env=env)
    check_recovery(data_dir, lines, queue_ids)
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener)
    assert journal.segments[0] == 1
    for group in range(2):  # the first group's writer compacts (or drops) segment 1 after it
        journal.barrier(group)
        listener.wait_for(group + 1)
    assert 1 not in journal.segments
    store.close()
    check_recovery(data_dir, lines, queue_ids)
