"""The deterministic broker-work harness (``benchmarks/broker_work.py``): what it reports
repeats exactly, and the older tree's function names compare with this tree's."""

from __future__ import annotations

from benchmarks.broker_work import TREE, _normal, opcodes

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


def test_older_tree_names_are_compared_as_this_tree_calls_them() -> None:
    assert _normal("<amqp 0-9-1 basic.publish>:decode") == (
        "amqp_protocol/generated/spec_0_9_1.py:BasicPublish.decode"
    )
    assert _normal("<amqp basic properties>:encode_header") == (
        "amqp_protocol/generated/spec_0_9_1.py:BasicProperties.encode_header"
    )
    assert _normal("amqp_spark/protocol/connection.py:Connection._read_frames") == (
        "amqp_protocol/connection.py:Connection._read_frames"
    )
