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
import time
from collections.abc import Iterator

from amqp_protocol import SPEC_0_9_1, Connection, events
from benchmarks.common import Row, row
from tests.durability.broker_process import BrokerProcess

M = SPEC_0_9_1.method
BODY = b"x" * 100
BATCH = 500  #: publishes per socket write
WINDOW = 5000  #: unconfirmed publishes allowed in flight
PREFETCH = 2000


class Client:
    """A minimal pipelined AMQP client on one channel."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
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


def _timed(fn: object, n: int) -> float:
    began = time.perf_counter()
    fn()  # type: ignore[operator]
    return n / (time.perf_counter() - began)


def measure(host: str, port: int, quick: bool) -> dict[str, float]:
    """msgs/s of each scenario against the broker at host:port."""
    n = 20_000 if quick else 100_000
    results: dict[str, float] = {}
    for nq in (1, 10):
        queues = [f"bench-{nq}-{i}" for i in range(nq)]
        confirmed, plain = Client(host, port), Client(host, port)
        confirmed.setup(queues)
        try:
            results[f"publish, no confirms, {nq}q"] = _timed(
                lambda plain=plain, queues=queues: plain.publish(queues, n, False), n
            )
            results[f"consume backlog, {nq}q"] = _timed(
                lambda queues=queues: Client(host, port).consume(queues, n), n
            )
            results[f"publish, confirms, {nq}q"] = _timed(
                lambda c=confirmed, queues=queues: c.publish(queues, n, True), n
            )
            consumer = Client(host, port)
            with contextlib.ExitStack() as stack:
                import threading

                t = threading.Thread(target=consumer.consume, args=(queues, n))
                began = time.perf_counter()
                t.start()
                stack.callback(t.join, 60)
                plain.publish(queues, n, False)
                t.join(60)
                results[f"publish+consume, {nq}q"] = n / (time.perf_counter() - began)
            consumer.close()
            confirmed.call(M("queue.purge")(queue=queues[0]), "queue.purge-ok")
        finally:
            confirmed.close()
            plain.close()
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
        from tests.support.rabbitmq import RabbitMQUnavailable, rabbitmq
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
