"""A data directory written in journal format 3 (by the broker of that time: basic messages,
a durable queue's file lane, a quorum queue) recovers under the current broker: it has no
delivery log, so every message comes back redelivered."""

from __future__ import annotations

import shutil
from pathlib import Path

import pika

from broker import Broker
from tests.store import format_v1_data_dir, format_v2_data_dir, format_v3_data_dir
from tests.store.test_format_v1_recovery import delivered, expected, segment_version
from tests.store.test_format_v2_recovery import delivered_files

FIXTURE = Path(__file__).parent / "fixtures" / "data-v3"


def quorum_messages(data_dir: Path) -> list[tuple[bytes, bool, object]]:
    """(body, redelivered, x-delivery-count) of the quorum queue's messages, by consumer."""
    with Broker(data_dir=str(data_dir)) as broker:
        url = f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F"
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            ch = conn.channel()
            out = []
            for method, properties, body in ch.consume(
                format_v3_data_dir.QUORUM_QUEUE, auto_ack=True, inactivity_timeout=5
            ):
                if method is None:
                    break
                count = (properties.headers or {}).get("x-delivery-count")
                out.append((body, method.redelivered, count))
                if len(out) == len(format_v3_data_dir.QUORUM_BODIES):
                    break
            ch.cancel()
            return out


def test_a_format_3_data_dir_recovers_its_messages_all_redelivered(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    assert segment_version(data_dir) == 3
    assert delivered(data_dir) == expected(redelivered=True)
    assert delivered_files(data_dir) == [(body, True) for body in format_v2_data_dir.FILES]
    # Format 3 did not record deliveries: redelivered, and x-delivery-count starts again.
    assert quorum_messages(data_dir) == [
        (body, True, None) for body in format_v3_data_dir.QUORUM_BODIES
    ]
    assert delivered(data_dir) == {queue: [] for queue in format_v1_data_dir.EXPECTED}
