"""Queues larger than memory, publishers blocked by memory and disk limits, and data
directories the broker refuses to start on."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pika
import pytest

from amqp_spark.client import connect
from broker import Broker
from broker.model.ready_messages import ReadyMessages
from broker.store import StoreError

BATCH = 1000


def publish_numbered(url: str, queue: str, count: int, persistent: bool) -> None:
    """Publish bodies b"0", b"1", ... with confirms, a batch at a time."""
    props = {"delivery_mode": 2 if persistent else 1}
    with connect(url) as conn:
        ch = conn.channel()
        ch.confirm_select()
        for start in range(0, count, BATCH):
            ch.basic_publish_batch(
                "", [(queue, b"%d" % i, props) for i in range(start, min(start + BATCH, count))]
            )
        ch.wait_for_confirms(timeout=60)


def consume_numbered(url: str, queue: str, count: int) -> list[bytes]:
    bodies: list[bytes] = []
    with connect(url) as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=2000)
        ch.basic_consume(queue, no_ack=True)
        deadline = time.monotonic() + 60
        while len(bodies) < count and time.monotonic() < deadline:
            delivery = ch.next_delivery(timeout=1.0)
            if delivery is not None:
                bodies.append(delivery.body)
    return bodies


@pytest.mark.parametrize("durable", [False, True], ids=["in-memory", "durable"])
def test_a_queue_past_the_memory_threshold_is_consumed_completely_in_order(
    tmp_path: Path, durable: bool
) -> None:
    count = ReadyMessages.SPILL_AFTER_MESSAGES * 2 + 123
    with Broker(data_dir=str(tmp_path / "data") if durable else None) as broker:
        with connect(broker.url) as conn:
            conn.channel().queue_declare("big", durable=durable)
        publish_numbered(broker.url, "big", count, persistent=durable)
        server = broker.server
        ready = server.vhosts["/"].queues["big"].ready
        assert ready.spilled > count // 2  # most of it is on disk, not in memory
        held = server.memory.used
        assert held < count * 10  # bodies are ~5 bytes: spilled ones are not counted
        assert consume_numbered(broker.url, "big", count) == [b"%d" % i for i in range(count)]


def test_spilled_persistent_messages_come_back_in_order_after_restart(tmp_path: Path) -> None:
    count = ReadyMessages.SPILL_AFTER_MESSAGES + 5000
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker:
        with connect(broker.url) as conn:
            conn.channel().queue_declare("big", durable=True)
        publish_numbered(broker.url, "big", count, persistent=True)
    with Broker(data_dir=data) as broker:
        assert consume_numbered(broker.url, "big", count) == [b"%d" % i for i in range(count)]


def blocked_reasons(url: str, publish: int) -> list[str]:
    """connection.blocked reasons a publisher receives after ``publish`` publishes. A blocked
    connection is no longer read by the broker (as with RabbitMQ), so pika drops it after
    ``blocked_connection_timeout`` instead of waiting for a close-ok."""
    reasons: list[str] = []
    params = pika.URLParameters(url)
    params.blocked_connection_timeout = 1
    conn = pika.BlockingConnection(params)
    conn.add_on_connection_blocked_callback(lambda _, frame: reasons.append(frame.method.reason))
    ch = conn.channel()
    ch.queue_declare("blocked", durable=True)
    for _ in range(publish):
        ch.basic_publish("", "blocked", b"x" * 1000)
    deadline = time.monotonic() + 10
    with contextlib.suppress(pika.exceptions.ConnectionBlockedTimeout):
        while conn.is_open and time.monotonic() < deadline:
            conn.process_data_events(0.1)
    assert not conn.is_open
    return reasons


def test_low_disk_space_blocks_publishers(tmp_path: Path) -> None:
    config = {"disk_free_limit": 1 << 62}  # more than any disk has free
    with Broker(config=config, data_dir=str(tmp_path / "data")) as broker:
        reasons = blocked_reasons(broker.url, 1)
    assert len(reasons) == 1 and reasons[0].startswith("low disk space on ")


def test_memory_high_watermark_blocks_publishers(tmp_path: Path) -> None:
    config = {"memory_high_watermark": 10_000}
    with Broker(config=config, data_dir=str(tmp_path / "data")) as broker:
        assert blocked_reasons(broker.url, 20) == ["low on memory"]


def run_cli(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "broker",
            "--port",
            "0",
            "--management-port",
            "0",
            "--stream-port",
            "0",
        ]
        + ["--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_cli_refuses_a_data_dir_that_is_a_file_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "a-file"
    path.write_text("not a directory")
    result = run_cli(path)
    assert result.returncode == 1
    assert str(path) in result.stderr
    assert "listening" not in result.stderr


def test_cli_refuses_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "someone-elses.txt").write_text("data")
    result = run_cli(tmp_path)
    assert result.returncode == 1
    assert f"{tmp_path}: not an amqp-spark broker data directory" in result.stderr
    assert "listening" not in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to a read-only directory")
def test_cli_refuses_a_read_only_directory(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        result = run_cli(tmp_path / "data")
    finally:
        tmp_path.chmod(0o700)
    assert result.returncode == 1
    assert str(tmp_path / "data") in result.stderr


def test_in_process_broker_on_a_locked_data_dir_does_not_start(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(data_dir=data), pytest.raises(StoreError, match="another broker"):
        Broker(data_dir=data).start()
