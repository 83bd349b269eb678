"""A data directory whose topology file is format version 1 (as brokers wrote it before the
format gained a version for topic permissions) opens with everything it defines. The
fixture ``fixtures/topology-v1`` was written by such a broker, configured with user ``app``
(password ``app-secret``): permissions ``^app-``, topic permissions on ``app-events``, a
durable topic exchange ``app-events`` bound with ``app.paid`` to the durable queue
``app-orders`` (``x-max-length`` 5)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker

from broker import Broker
from broker.store.topology import load_topology

FIXTURE = Path(__file__).parent / "fixtures" / "topology-v1"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    assert json.loads((data_dir / "topology.json").read_text())["version"] == 1
    return data_dir


@pytest.fixture
def app_channel(data_dir: Path) -> Iterator[BlockingChannel]:
    """A channel of user ``app``, whom only the data directory defines (the broker's
    configuration has guest alone)."""
    with Broker(data_dir=str(data_dir)) as broker:
        params = pika.URLParameters(broker.url.replace("guest:guest", "app:app-secret"))
        conn = pika.BlockingConnection(params)
        try:
            yield conn.channel()
        finally:
            if conn.is_open:
                conn.close()


def test_a_version_1_file_keeps_its_users_permissions_and_durable_entities(
    app_channel: BlockingChannel,
) -> None:
    ch = app_channel
    ch.exchange_declare("app-events", "topic", durable=True, passive=True)
    ch.basic_publish("app-events", "app.paid", b"paid")
    got = ch.basic_get("app-orders", auto_ack=True)
    assert got[2] == b"paid"
    with pytest.raises(ChannelClosedByBroker) as refused:
        ch.queue_declare("app-orders", durable=True, arguments={"x-max-length": 6})
    assert refused.value.reply_code == 406  # the stored x-max-length is 5
    ch = ch.connection.channel()
    with pytest.raises(ChannelClosedByBroker) as refused:
        ch.queue_declare("not-app")
    assert refused.value.reply_code == 403  # configure is ^app-


def test_a_version_1_file_keeps_its_topic_permissions(
    app_channel: BlockingChannel,
) -> None:
    with pytest.raises(ChannelClosedByBroker) as refused:
        app_channel.basic_publish("app-events", "other.paid", b"")
        app_channel.queue_declare("app-orders", durable=True, passive=True)  # a round trip
    assert refused.value.reply_code == 403
    assert "access to topic 'other.paid' in exchange 'app-events'" in refused.value.reply_text


def test_a_version_1_file_from_before_topic_permissions_has_none(data_dir: Path) -> None:
    path = data_dir / "topology.json"
    with_topics = load_topology(path)
    doc = json.loads(path.read_text())
    del doc["topic_permissions"]
    path.write_text(json.dumps(doc))
    without = load_topology(path)
    assert without.topic_permissions == {}
    assert without.users == with_topics.users
    assert without.permissions == with_topics.permissions
    assert (without.exchanges, without.queues, without.bindings) == (
        with_topics.exchanges,
        with_topics.queues,
        with_topics.bindings,
    )


def test_a_version_1_file_is_rewritten_as_version_2_with_its_topic_permissions(
    data_dir: Path,
) -> None:
    with Broker(data_dir=str(data_dir)):
        pass
    doc = json.loads((data_dir / "topology.json").read_text())
    assert doc["version"] == 2
    assert [(p["user"], p["exchange"]) for p in doc["topic_permissions"]] == [("app", "app-events")]
