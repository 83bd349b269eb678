"""The deterministic broker-work harness (``benchmarks/ab/broker_work.py``): what it reports
repeats exactly."""

from __future__ import annotations

from benchmarks.ab.broker_work import TREE, opcodes

WORKLOADS = [
    "publish, no confirms, 1q",
    "consume, acks, 1q",
    "publish, confirms, 1q",
    "publish, no confirms, 10q",
]


def test_bytecodes_per_message_repeat_exactly_from_run_to_run() -> None:
    first, second = opcodes(TREE, "counters", 20), opcodes(TREE, "counters", 20)
    assert list(first) == WORKLOADS
    assert first == second
    publish = first["publish, no confirms, 1q"]
    assert publish["broker/server/channel.py:ServerChannel._enqueue"] > 0
    consume = first["consume, acks, 1q"]
    assert consume["broker/server/channel.py:ServerChannel.track_delivery"] > 0
