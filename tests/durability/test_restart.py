"""A clean restart on the same data directory: what is durable comes back, the rest does not."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker

from broker import Broker

PERSISTENT = pika.BasicProperties(delivery_mode=2)
TRANSIENT = pika.BasicProperties(delivery_mode=1)
CONFIG = {
    "vhosts": ["/", "staging"],
    "users": {
        "guest": {"password": "guest", "vhosts": ["/"], "tags": ["administrator"]},
        "app": {
            "password": "secret",
            "permissions": {"staging": {"configure": "^app-", "write": ".*", "read": ".*"}},
        },
    },
}


def connect(
    broker: Broker, user: str = "guest", password: str = "guest", vhost: str = "%2F"
) -> pika.BlockingConnection:
    url = f"amqp://{user}:{password}@127.0.0.1:{broker.port}/{vhost}"
    return pika.BlockingConnection(pika.URLParameters(url))


def get_all(
    ch: pika.adapters.blocking_connection.BlockingChannel, queue: str
) -> list[tuple[bytes, bool]]:
    """(body, redelivered) of every message of the queue, by basic.get."""
    out: list[tuple[bytes, bool]] = []
    for _ in range(10_000):
        method, _, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append((body, method.redelivered))
    raise AssertionError("more messages than expected")


def test_durable_topology_users_and_permissions_survive_restart(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(config=CONFIG, data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.exchange_declare("orders", "topic", durable=True)
        ch.exchange_declare("audit", "fanout", durable=True)
        ch.exchange_bind("audit", "orders", "order.#")
        ch.queue_declare("paid", durable=True, arguments={"x-max-length": 100})
        ch.queue_bind("paid", "orders", "order.paid")
        ch.queue_declare("audit-log", durable=True)
        ch.queue_bind("audit-log", "audit")
        ch.exchange_declare("scratch", "direct", durable=False)
        ch.queue_declare("transient-q", durable=False)
    with Broker(data_dir=data) as broker:  # no configuration: users come from the data dir
        with connect(broker) as conn:
            ch = conn.channel()
            ch.exchange_declare("orders", "topic", passive=True)
            ok = ch.queue_declare("paid", durable=True, arguments={"x-max-length": 100})
            assert ok.method.message_count == 0
            ch.basic_publish("orders", "order.paid", b"routed", PERSISTENT)
            assert get_all(ch, "paid") == [(b"routed", False)]
            assert get_all(ch, "audit-log") == [(b"routed", False)]  # exchange-to-exchange
            for kind, name in (("exchange", "scratch"), ("queue", "transient-q")):
                with pytest.raises(ChannelClosedByBroker) as e:
                    passive = conn.channel()
                    if kind == "exchange":
                        passive.exchange_declare(name, passive=True)
                    else:
                        passive.queue_declare(name, passive=True)
                assert e.value.reply_code == 404
        with connect(broker, "app", "secret", "staging") as conn:
            ch = conn.channel()
            ch.queue_declare("app-jobs", durable=True)
            with pytest.raises(ChannelClosedByBroker) as e:
                ch.queue_declare("other-jobs")
            assert e.value.reply_code == 403


def test_persistent_messages_in_durable_queues_come_back(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("durable", durable=True)
        ch.queue_declare("transient", durable=False)
        ch.confirm_delivery()
        for i in range(5):
            ch.basic_publish("", "durable", b"p%d" % i, PERSISTENT)
            ch.basic_publish("", "durable", b"t%d" % i, TRANSIENT)
            ch.basic_publish("", "transient", b"p%d" % i, PERSISTENT)
        method, _, body = ch.basic_get("durable", auto_ack=False)
        assert body == b"p0"
        ch.basic_ack(method.delivery_tag)
        method, _, body = ch.basic_get("durable", auto_ack=False)
        assert body == b"t0"  # left unacknowledged
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        # Never delivered before the restart: not redelivered (t0, delivered, was transient).
        assert get_all(ch, "durable") == [(b"p%d" % i, False) for i in range(1, 5)]
        with pytest.raises(ChannelClosedByBroker):
            ch.queue_declare("transient", passive=True)


def test_a_message_in_several_durable_queues_is_acked_per_queue(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        for q in ("fan-1", "fan-2", "fan-3"):
            ch.queue_declare(q, durable=True)
            ch.queue_bind(q, "amq.fanout")
        ch.confirm_delivery()
        ch.basic_publish("amq.fanout", "", b"shared", PERSISTENT)
        assert get_all(ch, "fan-1") == [(b"shared", False)]
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        assert get_all(ch, "fan-1") == []
        assert get_all(ch, "fan-2") == [(b"shared", False)]
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        assert get_all(ch, "fan-2") == []
        assert get_all(ch, "fan-3") == [(b"shared", False)]


def test_dead_lettered_persistent_messages_are_kept_in_a_durable_queue(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("dead", durable=True)
        ch.queue_declare("work", durable=True, arguments={"x-dead-letter-exchange": "amq.direct"})
        ch.queue_bind("dead", "amq.direct", "work")
        ch.basic_publish("", "work", b"rejected", PERSISTENT)
        method, _, _ = ch.basic_get("work")
        ch.basic_reject(method.delivery_tag, requeue=False)
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        assert get_all(ch, "work") == []
        assert [body for body, _ in get_all(ch, "dead")] == [b"rejected"]


def test_deleted_durable_queue_does_not_come_back(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("gone", durable=True)
        ch.basic_publish("", "gone", b"x", PERSISTENT)
        ch.queue_delete("gone")
        ch.queue_declare("gone", durable=True)  # a new queue of the same name
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        assert conn.channel().queue_declare("gone", passive=True).method.message_count == 0


def test_stream_keeps_its_log_and_offsets_across_restart(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    stream = {"x-queue-type": "stream"}
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("events", durable=True, arguments=stream)
        ch.confirm_delivery()
        for i in range(100):
            ch.basic_publish("", "events", b"e%d" % i)
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("", "events", b"e100")
        ch.basic_qos(prefetch_count=200)
        received = []
        for method, props, body in ch.consume(
            "events", inactivity_timeout=5, arguments={"x-stream-offset": "first"}
        ):
            assert method is not None, "fewer messages than published"
            received.append((props.headers["x-stream-offset"], body))
            ch.basic_ack(method.delivery_tag)
            if len(received) == 101:
                break
        assert received == [(i, b"e%d" % i) for i in range(101)]


def test_stream_chunk_filters_survive_a_restart(tmp_path: Path) -> None:
    """The chunk filters are stored in the log: after a restart a filtered consumer still
    gets only the chunks that may match (each publish a chunk of its own: confirm awaited)."""
    data = str(tmp_path / "data")
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("tagged", durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_delivery()
        for i, value in enumerate(["a", "b", "a", "b"]):
            headers = {"x-stream-filter-value": value}
            ch.basic_publish(
                "", "tagged", b"%s%d" % (value.encode(), i), pika.BasicProperties(headers=headers)
            )
    with Broker(data_dir=data) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=10)
        arguments = {"x-stream-offset": "first", "x-stream-filter": "b"}
        received = []
        for method, _, body in ch.consume("tagged", inactivity_timeout=1, arguments=arguments):
            if method is None:
                break
            received.append(body)
        assert received == [b"b1", b"b3"]


class _SlowSync:
    """Wraps os.fdatasync: each call takes ``delay`` longer and is recorded with its end."""

    def __init__(self, real: Callable[[int], None], delay: float) -> None:
        self.real = real
        self.delay = delay
        self.done: list[float] = []

    def __call__(self, fd: int) -> None:
        time.sleep(self.delay)
        self.real(fd)
        self.done.append(time.monotonic())


@pytest.mark.parametrize(
    ("queue", "arguments"),
    [("classic-q", None), ("stream-q", {"x-queue-type": "stream"})],
)
def test_a_publish_is_confirmed_only_after_its_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queue: str, arguments: dict[str, str] | None
) -> None:
    import os

    with Broker(data_dir=str(tmp_path / "data")) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare(queue, durable=True, arguments=arguments)
        ch.confirm_delivery()
        slow = _SlowSync(os.fdatasync, 0.3)
        monkeypatch.setattr(os, "fdatasync", slow)
        began = time.monotonic()
        ch.basic_publish("", queue, b"m", PERSISTENT)  # returns once confirmed
        confirmed = time.monotonic()
        monkeypatch.undo()
        assert slow.done and began < slow.done[0] <= confirmed


def test_tx_commit_ok_comes_only_after_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    with Broker(data_dir=str(tmp_path / "data")) as broker, connect(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("tx-q", durable=True)
        ch.tx_select()
        ch.basic_publish("", "tx-q", b"m", PERSISTENT)
        slow = _SlowSync(os.fdatasync, 0.3)
        monkeypatch.setattr(os, "fdatasync", slow)
        began = time.monotonic()
        ch.tx_commit()
        committed = time.monotonic()
        monkeypatch.undo()
        assert slow.done and began < slow.done[0] <= committed
