"""A data directory written in journal format 2 (by the broker of that time: basic messages
and a durable queue's file lane) recovers under the current broker, and so does one the
current broker writes with the same traffic."""

from __future__ import annotations

import shutil
from pathlib import Path

from broker import Broker
from tests.spec09.flows import peer_on, receive_file
from tests.store import format_v1_data_dir, format_v2_data_dir
from tests.store.test_format_v1_recovery import delivered, expected, segment_version

FIXTURE = Path(__file__).parent / "fixtures" / "data-v2"


def delivered_files(data_dir: Path) -> list[tuple[bytes, bool]]:
    """(body, redelivered) of the file lane's messages, consumed with no-ack."""
    with Broker(data_dir=str(data_dir)) as broker:
        peer = peer_on(f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F")
        try:
            peer.call(1, "file.consume", queue=format_v2_data_dir.FILE_QUEUE, no_ack=True)
            received = []
            for _ in format_v2_data_dir.FILES:
                deliver, body = receive_file(peer, 1)
                received.append((bytes(body), bool(deliver.redelivered)))
            peer.nothing(1, "file.open")
            return received
        finally:
            peer.close()


def test_a_format_2_data_dir_recovers_its_messages_in_order(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    assert segment_version(data_dir) == 2
    assert delivered(data_dir) == expected()
    assert delivered_files(data_dir) == [(body, True) for body in format_v2_data_dir.FILES]
    # The acks of those deliveries were journaled after the format 2 records: none comes back.
    assert delivered(data_dir) == {queue: [] for queue in format_v1_data_dir.EXPECTED}


def test_the_same_traffic_in_the_current_format_recovers_the_same(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    format_v2_data_dir.write(data_dir)
    assert delivered(data_dir) == expected(redelivered=False)
    assert delivered_files(data_dir) == [(body, True) for body in format_v2_data_dir.FILES]
