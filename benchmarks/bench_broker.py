"""The bundled broker against RabbitMQ, same client: a pipelined raw-socket client built on
``amqp_protocol`` that writes many publish frames per send, so the broker is the
bottleneck. 100-byte bodies; 1 queue and 10 queues; publish only (with and without
confirms), consume from a backlog, publish and consume together.

The bundled broker runs as its own process (``python -m broker``), as RabbitMQ does, so the
client does not share its interpreter. ``python -m benchmarks.bench_broker [--quick]``.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator

from amqp_protocol import SPEC_0_9_1, Connection, events
from benchmarks.common import Row, row
from benchmarks.process_cpu import scheduled_seconds
from testbed.broker_process import BrokerProcess

M = SPEC_0_9_1.method
BODY = b"x" * 100
BATCH = 500  #: publishes per socket write
WINDOW = 5000  #: unconfirmed publishes allowed in flight
PREFETCH = 2000
QUEUE_COUNTS = (1, 10)
#: Seconds a client waits for the broker (a broker under callgrind needs more).
TIMEOUT = 30.0


class Client:
    """A minimal pipelined AMQP client on one channel."""

    def __init__(self, host: str, port: int, timeout: float = TIMEOUT) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = Connection(role="client", spec=SPEC_0_9_1)
        self.pending: list[events.Event] = []
        self.sock.sendall(self.conn.initiate())
        self._expect("connection.start")
        self._send(
            0,
            M("connection.start-ok")(
                client_properties={}, mechanism="PLAIN", response=b"\0guest\0guest", locale="en_US"
            ),
        )
        tune = self._expect("connection.tune")
        self._send(
            0,
            M("connection.tune-ok")(
                channel_max=tune.channel_max,  # type: ignore[attr-defined]
                frame_max=131072,
                heartbeat=0,
            ),
        )
        self.conn.frame_max = 131072
        self._send(0, M("connection.open")(virtual_host="/"))
        self._expect("connection.open-ok")
        self._send(1, M("channel.open")())
        self._expect("channel.open-ok")
        self.props = SPEC_0_9_1.properties("basic")()

    def _send(self, channel: int, method: object) -> None:
        self.sock.sendall(self.conn.send_method(channel, method))  # type: ignore[arg-type]

    def read(self) -> list[events.Event]:
        if self.pending:
            evs, self.pending = self.pending, []
            return evs
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("broker closed the connection")
        return self.conn.receive_data(data)

    def _expect(self, name: str) -> object:
        """Read until method ``name``; other events (deliveries) stay pending for read()."""
        others: list[events.Event] = []
        while True:
            evs = self.read()
            for i, ev in enumerate(evs):
                if isinstance(ev, events.MethodReceived) and name == ev.method.NAME:
                    self.pending = others + evs[:i] + evs[i + 1 :]
                    return ev.method
            others += evs

    def call(self, method: object, reply: str) -> object:
        self._send(1, method)
        return self._expect(reply)

    def publish(self, queues: list[str], n: int, confirm: bool) -> None:
        """Publish ``n`` messages round robin over ``queues``; returns once the broker has
        processed them all (confirmed, or answered a synchronous method sent after them)."""
        frames = [
            self.conn.send_content(1, M("basic.publish")(routing_key=q), self.props, BODY)
            for q in queues
        ]
        acked = sent = 0
        while sent < n:
            k = min(BATCH, n - sent)
            self.sock.sendall(b"".join(frames[(sent + i) % len(frames)] for i in range(k)))
            sent += k
            while confirm and sent - acked > WINDOW:
                acked = self._read_acks(acked)
        while confirm and acked < n:
            acked = self._read_acks(acked)
        if not confirm:
            self.call(M("queue.declare")(queue=queues[0], passive=True), "queue.declare-ok")

    def _read_acks(self, acked: int) -> int:
        for ev in self.read():
            if isinstance(ev, events.MethodReceived) and ev.method.NAME == "basic.ack":
                acked = ev.method.delivery_tag  # type: ignore[attr-defined]
        return acked

    def consume(
        self, queues: list[str], n: int, arguments: dict[str, object] | None = None
    ) -> None:
        """Consume ``n`` messages from ``queues`` (basic.consume ``arguments``, e.g. a stream's
        ``x-stream-offset``), acking in batches."""
        self.call(M("basic.qos")(prefetch_count=PREFETCH), "basic.qos-ok")
        for q in queues:
            self.call(M("basic.consume")(queue=q, arguments=arguments), "basic.consume-ok")
        got = last_acked = 0
        while got < n:
            for ev in self.read():
                if isinstance(ev, events.ContentReceived):
                    got += 1
                    tag = ev.method.delivery_tag  # type: ignore[attr-defined]
            if got - last_acked >= PREFETCH // 4 or got >= n:
                self._send(1, M("basic.ack")(delivery_tag=tag, multiple=True))
                last_acked = got

    def setup(self, queues: list[str]) -> None:
        for q in queues:
            self.call(M("queue.declare")(queue=q, auto_delete=False), "queue.declare-ok")
            self.call(M("queue.purge")(queue=q), "queue.purge-ok")
        self.call(M("confirm.select")(), "confirm.select-ok")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _timed(fn: Callable[[], object], n: int) -> float:
    began = time.perf_counter()
    fn()
    return n / (time.perf_counter() - began)


def timed_with_cpu(fn: Callable[[], object], n: int, pid: int) -> tuple[float, float]:
    """``fn``'s rate over ``n`` messages, and the CPU microseconds per message that process
    ``pid`` (the broker) spent meanwhile."""
    cpu = scheduled_seconds(pid)
    rate = _timed(fn, n)
    return rate, (scheduled_seconds(pid) - cpu) / n * 1e6


def _publish_and_consume(publisher: Client, consumer: Client, queues: list[str], n: int) -> None:
    """Publish ``n`` messages while another connection consumes them."""
    t = threading.Thread(target=consumer.consume, args=(queues, n))
    t.start()
    try:
        publisher.publish(queues, n, False)
    finally:
        t.join(consumer.sock.gettimeout())
        consumer.close()


@contextlib.contextmanager
def workloads(
    host: str, port: int, n: int, nq: int, timeout: float = TIMEOUT
) -> Iterator[dict[str, Callable[[], None]]]:
    """The scenarios on ``nq`` queues, ``n`` messages each, to run in this order (each
    consumes what the one before published); the queues are purged before and after.
    ``timeout``: how long a client waits for the broker."""
    queues = [f"bench-{nq}-{i}" for i in range(nq)]

    def client() -> Client:
        return Client(host, port, timeout)

    confirmed, plain = client(), client()
    try:
        confirmed.setup(queues)
        yield {
            f"publish, no confirms, {nq}q": lambda: plain.publish(queues, n, False),
            f"consume backlog, {nq}q": lambda: client().consume(queues, n),
            f"publish, confirms, {nq}q": lambda: confirmed.publish(queues, n, True),
            f"publish+consume, {nq}q": lambda: _publish_and_consume(plain, client(), queues, n),
        }
        for q in queues:
            confirmed.call(M("queue.purge")(queue=q), "queue.purge-ok")
    finally:
        confirmed.close()
        plain.close()


def measure(host: str, port: int, quick: bool) -> dict[str, float]:
    """msgs/s of each scenario against the broker at host:port."""
    n = 20_000 if quick else 100_000
    results: dict[str, float] = {}
    for nq in QUEUE_COUNTS:
        with workloads(host, port, n, nq) as scenarios:
            for name, fn in scenarios.items():
                results[name] = _timed(fn, n)
    return results


@contextlib.contextmanager
def bundled_broker() -> Iterator[tuple[str, int]]:
    """(host, port) of ``python -m broker --in-memory`` in its own process."""
    with BrokerProcess(None, "--log-level", "WARNING") as broker:
        yield "127.0.0.1", broker.port


def run(quick: bool) -> list[Row]:
    with bundled_broker() as (host, port):
        ours = measure(host, port, quick)
    reference: dict[str, float] = {}
    try:
        from testbed.rabbitmq import RabbitMQUnavailable, rabbitmq
    except ImportError:
        rabbitmq = None  # type: ignore[assignment]
    if rabbitmq is not None:
        import pika

        try:
            with rabbitmq() as url:
                p = pika.URLParameters(url)
                reference = measure(p.host, p.port, quick)
        except (RabbitMQUnavailable, OSError) as exc:  # socket.timeout is an OSError
            # Ours were measured: keep them, with no reference, and say why.
            print(f"bench_broker: no RabbitMQ reference: {exc!r}", file=sys.stderr)
    return [
        row(f"broker: {k}", "msgs/s", v, reference.get(k), "RabbitMQ" if reference else "")
        for k, v in ours.items()
    ]


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        ratio = f"{r['ours'] / r['reference']:.2f}" if r["reference"] else "-"
        print(f"{r['figure']:<40} {r['ours']:>10.0f} {r['reference'] or 0:>10.0f}  ratio {ratio}")
