"""The other clients: pika's SelectConnection, aio-pika, kombu (py-amqp) and node's amqplib."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
from pathlib import Path

import aio_pika
import kombu
import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.support.fixtures import _fail_in_ci_else_skip

NODE_DIR = Path(__file__).parent / "node"


def test_pika_select_connection_publishes_and_consumes(broker_url: str, name: str) -> None:
    got: list[bytes] = []

    def on_open(conn: pika.SelectConnection) -> None:
        conn.channel(on_open_callback=on_channel)

    def on_channel(ch: pika.channel.Channel) -> None:
        ch.queue_declare(name, auto_delete=True, callback=lambda _: on_declared(ch))

    def on_declared(ch: pika.channel.Channel) -> None:
        for i in range(5):
            ch.basic_publish("", name, b"%d" % i)
        ch.basic_consume(name, on_message)

    def on_message(
        ch: pika.channel.Channel, method: pika.spec.Basic.Deliver, props: object, body: bytes
    ) -> None:
        got.append(body)
        ch.basic_ack(method.delivery_tag)
        if len(got) == 5:
            ch.connection.close()

    conn = pika.SelectConnection(pika.URLParameters(broker_url), on_open_callback=on_open)
    conn.ioloop.call_later(10, conn.ioloop.stop)  # bound the test
    conn.add_on_close_callback(lambda *a: conn.ioloop.stop())
    conn.ioloop.start()
    assert got == [b"%d" % i for i in range(5)]


def test_aio_pika_robust_round_trip_with_confirms(broker_url: str, name: str) -> None:
    async def run() -> list[bytes]:
        conn = await aio_pika.connect_robust(broker_url, timeout=10)
        async with conn:
            ch = await conn.channel(publisher_confirms=True)
            await ch.set_qos(prefetch_count=10)
            ex = await ch.declare_exchange(name, aio_pika.ExchangeType.TOPIC, auto_delete=True)
            q = await ch.declare_queue(name, auto_delete=True)
            await q.bind(ex, "a.#")
            for i in range(20):
                await ex.publish(aio_pika.Message(b"%d" % i, headers={"i": i}), routing_key="a.b")
            got = []
            async with q.iterator() as it:
                async for msg in it:
                    async with msg.process():
                        got.append(msg.body)
                    if len(got) == 20:
                        break
            return got

    assert asyncio.run(asyncio.wait_for(run(), 20)) == [b"%d" % i for i in range(20)]


def test_kombu_py_amqp_producer_and_consumer(broker_url: str, name: str) -> None:
    exchange = kombu.Exchange(name, "direct", auto_delete=True)
    queue = kombu.Queue(name, exchange, routing_key="k", auto_delete=True)
    got: list[object] = []
    with kombu.Connection(broker_url.replace("amqp://", "pyamqp://"), connect_timeout=5) as conn:
        with conn.Producer() as producer:
            for i in range(5):
                producer.publish(
                    {"i": i}, exchange=exchange, routing_key="k", declare=[queue], serializer="json"
                )

        def on_message(body: object, message: kombu.Message) -> None:
            got.append(body)
            message.ack()

        with conn.Consumer(queue, callbacks=[on_message]):
            for _ in range(50):
                if len(got) == 5:
                    break
                with contextlib.suppress(TimeoutError):
                    conn.drain_events(timeout=0.2)
    assert got == [{"i": i} for i in range(5)]


@pytest.fixture(scope="session")
def amqplib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        _fail_in_ci_else_skip(
            "node and npm are needed for the amqplib smoke test "
            "(as root: bash scripts/install-apt-tool.sh amqplib npm nodejs npm)"
        )
    work = tmp_path_factory.mktemp("amqplib")
    for f in ("package.json", "smoke.js", "close.js"):
        shutil.copy(NODE_DIR / f, work / f)
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode != 0:
        _fail_in_ci_else_skip(
            f"npm install amqplib failed (registry unreachable?): {done.stderr[-500:]}"
        )
    return work


def test_node_amqplib_confirm_channel_round_trip(broker_url: str, amqplib_dir: Path) -> None:
    done = subprocess.run(
        ["node", "smoke.js", broker_url],
        cwd=amqplib_dir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [f"m{i}" for i in range(10)]


def test_node_amqplib_close_completes_with_publishes_still_buffered(
    broker_url: str, amqplib_dir: Path, channel: BlockingChannel, name: str
) -> None:
    """Issue 29: amqplib's close goes out ahead of its buffered publishes; the broker reads
    on after close-ok (RabbitMQ 4 does), so its writes do not fail and its close completes.
    Three times: the reads that split the close from the rest vary from run to run."""
    for _ in range(3):
        done = subprocess.run(
            ["node", "close.js", broker_url, name],
            cwd=amqplib_dir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (done.returncode, done.stdout) == (0, "closed\n"), done.stderr
    channel.queue_delete(name)
