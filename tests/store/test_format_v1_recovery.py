"""A data directory written in journal format 1 (by the broker of that time) recovers under
the current broker, and so does one the current broker writes with the same traffic."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pika

from broker import Broker
from broker.store import Store, records
from tests.store import format_v1_data_dir

FIXTURE = Path(__file__).parent / "fixtures" / "data-v1"


def delivered(data_dir: Path) -> dict[str, list[tuple[bytes, bool, int | None]]]:
    """(body, redelivered, priority) of each fixture queue's messages, by basic.get."""
    out: dict[str, list[tuple[bytes, bool, int | None]]] = {}
    with Broker(data_dir=str(data_dir)) as broker:
        url = f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F"
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            ch = conn.channel()
            for queue, bodies in format_v1_data_dir.EXPECTED.items():
                out[queue] = []
                for _ in range(len(bodies) + 1):
                    method, properties, body = ch.basic_get(queue, auto_ack=True)
                    if method is None:
                        break
                    out[queue].append((body, method.redelivered, properties.priority))
    return out


def expected(redelivered: bool = True) -> dict[str, list[tuple[bytes, bool, int | None]]]:
    """The fixture queues' messages: ``redelivered`` as recovered from a data directory of
    format 3 or older (no delivery log: every message counts as possibly delivered), not as
    the current format recovers them (none of them was delivered before the restart)."""
    return {
        queue: [(body, redelivered, 3) for body in bodies]
        for queue, bodies in format_v1_data_dir.EXPECTED.items()
    }


def segment_version(data_dir: Path) -> int:
    (segment,) = sorted((data_dir / "journal").glob("*.seg"))
    _, version, _ = records.SEGMENT_HEADER.unpack_from(segment.read_bytes())
    return int(version)


def test_a_format_1_data_dir_recovers_its_messages_in_order(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    assert segment_version(data_dir) == 1
    assert delivered(data_dir) == expected()
    # The acks of those deliveries were journaled after the format 1 records: none comes back.
    assert delivered(data_dir) == {queue: [] for queue in format_v1_data_dir.EXPECTED}


def test_the_same_traffic_in_the_current_format_recovers_the_same(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    format_v1_data_dir.write(data_dir)
    assert segment_version(data_dir) == records.FORMAT_VERSION
    assert delivered(data_dir) == expected(redelivered=False)


def test_opening_a_format_1_data_dir_marks_it_with_the_current_version(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    Store.open(data_dir).close()
    marker = json.loads((data_dir / "amqp-spark-data.json").read_bytes())
    assert marker["version"] == records.FORMAT_VERSION
