"""kill -9 of the broker program: what was confirmed (or acked) is what comes back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pika
from pika.adapters.blocking_connection import BlockingChannel

from testbed.broker_process import BrokerProcess

QUEUES = ["crash-a", "crash-b", "crash-c"]
PERSISTENT = pika.BasicProperties(delivery_mode=2)
PUBLISH_SECONDS = 1.5
WAIT = 10.0


def declare(url: str, queues: list[str], arguments: dict[str, str] | None = None) -> None:
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        ch = conn.channel()
        for q in queues:
            ch.queue_declare(q, durable=True, arguments=arguments)


def publish_until_killed(url: str, queue: str, confirmed: list[bytes]) -> None:
    """Publish persistent messages with a confirm each, recording the confirmed bodies,
    until the connection dies."""
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.confirm_delivery()
        for i in range(1_000_000):
            body = b"%s-%d" % (queue.encode(), i)
            ch.basic_publish("", queue, body, PERSISTENT)
            confirmed.append(body)
    except pika.exceptions.AMQPError:
        return


def consume_all(
    ch: BlockingChannel, queue: str, expected: int, arguments: dict[str, object] | None = None
) -> list[tuple[bytes, bool]]:
    """(body, redelivered) of every message, until ``expected`` arrived and nothing more came."""
    received: list[tuple[bytes, bool]] = []
    deadline = time.monotonic() + WAIT
    for method, _, body in ch.consume(queue, inactivity_timeout=0.5, arguments=arguments):
        if method is None:
            if len(received) >= expected or time.monotonic() > deadline:
                break
            continue
        received.append((body, method.redelivered))
        ch.basic_ack(method.delivery_tag)
    ch.cancel()
    return received


def test_confirmed_persistent_messages_survive_kill_9_exactly_once_in_order(
    tmp_path: Path,
) -> None:
    confirmed: dict[str, list[bytes]] = {q: [] for q in QUEUES}
    with BrokerProcess(tmp_path / "data") as broker:
        declare(broker.url, QUEUES)
        threads = [
            threading.Thread(target=publish_until_killed, args=(broker.url, q, confirmed[q]))
            for q in QUEUES
        ]
        for t in threads:
            t.start()
        time.sleep(PUBLISH_SECONDS)
        broker.kill()
        for t in threads:
            t.join(WAIT)
        counts = {q: len(bodies) for q, bodies in confirmed.items()}
        assert all(counts.values()), counts
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            for q in QUEUES:
                received = consume_all(conn.channel(), q, counts[q])
                bodies = [body for body, _ in received]
                # Everything confirmed, once, in order; at most the one unconfirmed publish
                # in flight at the kill may follow.
                assert bodies[: counts[q]] == confirmed[q]
                assert len(bodies) <= counts[q] + 1
                # None was delivered before the kill (the delivery log, docs/storage-format.md).
                assert not any(redelivered for _, redelivered in received)


def test_acked_messages_do_not_come_back_after_kill_9(tmp_path: Path) -> None:
    total = 3000
    with BrokerProcess(tmp_path / "data") as broker:
        declare(broker.url, ["acks", "marker"])
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            for i in range(total):
                ch.basic_publish("", "acks", b"%d" % i, PERSISTENT)
        acked: list[bytes] = []
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        ch.basic_qos(prefetch_count=50)
        for method, _, body in ch.consume("acks", inactivity_timeout=WAIT):
            assert method is not None, f"no delivery in {WAIT}s"
            ch.basic_ack(method.delivery_tag)
            acked.append(body)
            if len(acked) == total // 2:
                break
        # A reply on the channel means the broker has taken the acks; the journal writes in
        # order, so once a later persistent publish is confirmed, the acks are on disk too.
        ch.basic_qos(prefetch_count=50)
        marker = conn.channel()
        marker.confirm_delivery()
        marker.basic_publish("", "marker", b"after the acks", PERSISTENT)
        acked_before_kill = len(acked)
        broker.kill()
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn2:
            received = consume_all(conn2.channel(), "acks", total - acked_before_kill)
        bodies = [body for body, _ in received]
        assert bodies == [b"%d" % i for i in range(acked_before_kill, total)]
        # Those delivered unacked at the kill come back redelivered, the rest not: in order.
        flags = [redelivered for _, redelivered in received]
        assert flags == sorted(flags, reverse=True)


def test_confirmed_stream_messages_survive_kill_9(tmp_path: Path) -> None:
    confirmed: list[bytes] = []
    with BrokerProcess(tmp_path / "data") as broker:
        declare(broker.url, ["crash-stream"], {"x-queue-type": "stream"})
        thread = threading.Thread(
            target=publish_until_killed, args=(broker.url, "crash-stream", confirmed)
        )
        thread.start()
        time.sleep(PUBLISH_SECONDS)
        broker.kill()
        thread.join(WAIT)
        count = len(confirmed)
        assert count
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.basic_qos(prefetch_count=100)
            received = consume_all(ch, "crash-stream", count, {"x-stream-offset": "first"})
        bodies = [body for body, _ in received]
        assert bodies[:count] == confirmed
        assert len(bodies) <= count + 1


def test_a_sigterm_stop_keeps_every_persistent_publish(tmp_path: Path) -> None:
    """A clean stop writes what is pending: unconfirmed publishes before it are kept too."""
    with BrokerProcess(tmp_path / "data") as broker:
        declare(broker.url, ["stop"])
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            for i in range(500):
                ch.basic_publish("", "stop", b"%d" % i, PERSISTENT)
            conn.process_data_events(0.2)
        broker.stop()
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            received = consume_all(conn.channel(), "stop", 500)
        assert [body for body, _ in received] == [b"%d" % i for i in range(500)]
