"""The deterministic broker-work harness (``benchmarks/ab/broker_work.py``): what it reports
repeats exactly."""

from __future__ import annotations

from collections import Counter

from benchmarks.ab.broker_work import TREE, opcodes

WORKLOADS = [
    "publish, no confirms, 1q",
    "consume, acks, 1q",
    "publish, confirms, 1q",
    "publish, no confirms, 10q",
]


def project_work(counts: dict[str, Counter[str]]) -> dict[str, Counter[str]]:
    """The counts of the tree's own functions (named by their path in the tree). The
    standard library's are left out: how often asyncio's loop turns (``_run_once``) depends
    on when the OS reports a socket ready, which a loaded machine changes (measured: 39
    turns more in one of two runs, with every count of the tree's equal)."""
    return {
        workload: Counter({name: n for name, n in per_function.items() if not name.startswith("/")})
        for workload, per_function in counts.items()
    }


def test_bytecodes_per_message_repeat_exactly_from_run_to_run() -> None:
    first, second = opcodes(TREE, "counters", 20), opcodes(TREE, "counters", 20)
    assert list(first) == WORKLOADS
    assert project_work(first) == project_work(second)
    publish = first["publish, no confirms, 1q"]
    assert publish["broker/server/channel.py:ServerChannel._enqueue"] > 0
    consume = first["consume, acks, 1q"]
    assert consume["broker/server/channel.py:ServerChannel.track_delivery"] > 0
