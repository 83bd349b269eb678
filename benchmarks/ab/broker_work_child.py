"""The broker's work per message with no sockets and no timing, in the tree on PYTHONPATH.

Run by path (``python .../broker_work_child.py MODE N MEASURE``) with the working directory
and ``PYTHONPATH`` set to a checkout, so that its own ``broker`` and ``amqp_protocol`` run
(this file imports nothing else of a tree). The server is built as ``python -m broker`` builds it
(``BrokerServer(config, loop).start()``, listeners on port 0 that nothing connects to); each
client connection is an ``AMQPConnection`` on a transport that only records what the broker
writes. Every workload feeds pre-encoded client bytes in fixed chunks (``CHUNK``), running
the event loop until nothing is ready after each; the loop's clock is frozen after set-up,
so no timer (handshake timeout, the management sampler) fires while work is measured, and
the garbage collector starts each workload from the same state (``gc.freeze``): the same
bytes, the same chunks, the same work each run.

``MEASURE``: ``callgrind`` prints each workload's name, waits for ``go`` on stdin (the parent
turns callgrind's counting on), runs it, prints ``done`` and waits for ``next`` (nothing of
the next workload's set-up may run while the parent reads the count); ``opcodes`` prints, per
workload, a JSON line of Python bytecodes executed per function (``sys.settrace`` with
``f_trace_opcodes``: exact, deterministic, ~30x slower); ``adaptive`` prints, per workload,
the executions per function of each instruction in the form CPython 3.11's specialising
interpreter had quickened it to after an untraced run (``LOAD_ATTR_INSTANCE_VALUE``, or
``LOAD_ATTR_ADAPTIVE`` where specialising failed and the generic path runs). Modes: ``on``
(the management listener started), ``counters`` (no listener, ``--no-management``); the
parent puts a tree whose counting statements are ``pass`` first on the path for ``off``.
"""

from __future__ import annotations

import asyncio
import dis
import gc
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from amqp_protocol import SPEC_0_9_1, Connection, events
from broker.config import BrokerConfig
from broker.server.app import BrokerServer
from broker.server.connection import AMQPConnection

M = SPEC_0_9_1.method
BODY = b"x" * 100
CHUNK = 64 * 1024  #: bytes per data_received, as one socket read of a pipelining client
PREFETCH = 2000
ACK_EVERY = PREFETCH // 4  #: deliveries per multiple ack, as bench_broker's client acks
QUEUES = [f"work-{i}" for i in range(10)]


class RecordingTransport(asyncio.Transport):
    """Records what the broker writes; never pauses, never closes by itself."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.keep = True  #: False: count the bytes, drop them (work measured)
        self.size = 0
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.size += len(data)
        if self.keep:
            self.written.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5672) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def abort(self) -> None:
        self._closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def settle(loop: asyncio.AbstractEventLoop) -> None:
    """Run the loop until no callback is ready (timers never come due: the clock is frozen
    or far from them)."""
    ready = loop._ready  # type: ignore[attr-defined]  # asyncio's BaseEventLoop
    loop.run_until_complete(asyncio.sleep(0))
    while ready:
        loop.run_until_complete(asyncio.sleep(0))


class Peer:
    """One client connection: the broker's ``AMQPConnection`` on a ``RecordingTransport``,
    and the client side's encoder (and, during set-up, decoder)."""

    def __init__(self, server: BrokerServer, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport = RecordingTransport()
        self.conn = AMQPConnection(server, server.dialects)
        self.conn.connection_made(self.transport)
        self.client = Connection(role="client", spec=SPEC_0_9_1)
        self.feed(self.client.initiate())
        self.expect("connection.start")
        self.send(
            0,
            M("connection.start-ok")(
                client_properties={}, mechanism="PLAIN", response=b"\0guest\0guest", locale="en_US"
            ),
        )
        self.expect("connection.tune")
        self.send(0, M("connection.tune-ok")(channel_max=2047, frame_max=131072, heartbeat=0))
        self.client.frame_max = 131072
        self.send(0, M("connection.open")(virtual_host="/"))
        self.expect("connection.open-ok")
        self.call(M("channel.open")(), "channel.open-ok")

    def feed(self, data: bytes) -> None:
        for i in range(0, len(data), CHUNK):
            self.conn.data_received(data[i : i + CHUNK])
            settle(self.loop)

    def send(self, channel: int, method: Any) -> None:
        self.feed(self.client.send_method(channel, method))

    def expect(self, name: str) -> Any:
        """The last method ``name`` the broker wrote since the last call (set-up only)."""
        data, self.transport.written = b"".join(self.transport.written), []
        found = [
            ev.method
            for ev in self.client.receive_data(data)
            if isinstance(ev, events.MethodReceived) and name == ev.method.NAME
        ]
        if not found:
            raise RuntimeError(f"the broker did not answer {name}")
        return found[-1]

    def call(self, method: Any, reply: str) -> Any:
        self.send(1, method)
        return self.expect(reply)

    def publishes(self, queues: list[str], n: int) -> bytes:
        """``n`` publishes round robin over ``queues``, encoded."""
        props = SPEC_0_9_1.properties("basic")()
        frames = [
            self.client.send_content(1, M("basic.publish")(routing_key=q), props, BODY)
            for q in queues
        ]
        return b"".join(frames[i % len(frames)] for i in range(n))

    def close(self) -> None:
        self.send(0, M("connection.close")(reply_code=200, reply_text="", class_id=0, method_id=0))
        self.conn.connection_lost(None)


class Broker:
    """The server of ``mode`` and its set-up: ``QUEUES`` declared, a publisher, a confirming
    publisher."""

    def __init__(self, mode: str) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        config = BrokerConfig()
        config.port = 0
        config.host = "127.0.0.1"
        config.management.port = 0
        config.management.enabled = mode == "on"
        # No stream-protocol listener: its default port, 5552, is where a stream reader on
        # this machine may knock (measured: a Spark test's probe, counted as broker work).
        config.stream_port = None
        self.server = BrokerServer(config, self.loop)
        self.loop.run_until_complete(self.server.start())
        self.plain = Peer(self.server, self.loop)
        self.confirmed = Peer(self.server, self.loop)
        for q in QUEUES:
            self.plain.call(M("queue.declare")(queue=q), "queue.declare-ok")
        self.confirmed.call(M("confirm.select")(), "confirm.select-ok")

    def freeze_clock(self) -> None:
        now = self.loop.time()
        self.loop.time = lambda: now  # type: ignore[method-assign]

    def purge(self) -> None:
        for q in QUEUES:
            self.plain.call(M("queue.purge")(queue=q), "queue.purge-ok")

    def workloads(self, n: int) -> Iterator[tuple[str, Callable[[], None]]]:
        """(name, work) in order, each ready to run: its bytes encoded, its state set up;
        what each leaves behind is cleared before the next."""
        data = self.plain.publishes(QUEUES[:1], n)
        yield "publish, no confirms, 1q", lambda: self.plain.feed(data)
        consumer = Peer(self.server, self.loop)
        consumer.call(M("basic.qos")(prefetch_count=PREFETCH), "basic.qos-ok")
        acks = [
            consumer.client.send_method(1, M("basic.ack")(delivery_tag=tag, multiple=True))
            for tag in [*range(ACK_EVERY, n, ACK_EVERY), n]
        ]
        consume = consumer.client.send_method(1, M("basic.consume")(queue=QUEUES[0]))
        consumer.transport.keep = False

        def consume_with_acks() -> None:
            consumer.feed(consume)
            for ack in acks:
                consumer.feed(ack)

        yield "consume, acks, 1q", consume_with_acks
        consumer.transport.keep = True
        consumer.close()
        data = self.confirmed.publishes(QUEUES[:1], n)
        self.confirmed.transport.keep = False
        yield "publish, confirms, 1q", lambda: self.confirmed.feed(data)
        self.confirmed.transport.keep = True
        self.confirmed.transport.written.clear()
        self.purge()
        data = self.plain.publishes(QUEUES, n)
        yield "publish, no confirms, 10q", lambda: self.plain.feed(data)
        self.purge()


def _name(code: Any, roots: list[str]) -> str:
    """``path:qualname``, the path relative to the first of ``roots`` it is in."""
    path = code.co_filename
    for root in roots:
        if path.startswith(root):
            return f"{path[len(root) :].lstrip('/')}:{code.co_qualname}"
    return f"{path}:{code.co_qualname}"


def executed(
    work: Callable[[], None], forms: dict[Any, dict[int, str]] | None = None
) -> Counter[tuple[Any, int]]:
    """How often ``work`` executed each instruction: (code, offset) -> count. With ``forms``,
    each code's instructions are read the first time it runs (``offset -> opname`` in the
    specialised form the warm-up rounds left, before tracing can change it)."""
    counts: Counter[tuple[Any, int]] = Counter()

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            if forms is not None and code not in forms:
                if sys.version_info < (3, 11):
                    raise RuntimeError("instruction forms are CPython 3.11's specialisation")
                found = dis.get_instructions(code, adaptive=True)
                forms[code] = {i.offset: i.opname for i in found}
            counts[code, frame.f_lasti] += 1
        return trace

    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(None)
    return counts


def opcodes(work: Callable[[], None], roots: list[str]) -> Counter[str]:
    """Bytecodes executed by ``work``, per function."""
    counts: Counter[str] = Counter()
    for (code, _), n in executed(work).items():
        counts[_name(code, roots)] += n
    return counts


def adaptive(work: Callable[[], None], roots: list[str]) -> Counter[str]:
    """``path:qualname OPNAME`` -> executions, each instruction named by its specialised form."""
    forms: dict[Any, dict[int, str]] = {}
    counts: Counter[str] = Counter()
    for (code, offset), n in executed(work, forms).items():
        counts[f"{_name(code, roots)} {forms[code].get(offset, '?')}"] += n
    return counts


def main() -> None:
    mode, n, measure = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    import broker

    print(json.dumps({"broker": broker.__file__}), flush=True)
    roots = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    server = Broker(mode)
    for _, work in server.workloads(max(n // 5, 1)):  # first-time paths, caches: not measured
        work()
    server.freeze_clock()
    for _ in range(rounds):
        for name, work in server.workloads(n):
            # A full collection costs with the size of the heap, not with the work: each
            # workload starts with the heap so far frozen and every generation empty, so
            # the collections it triggers are the same each run.
            gc.collect()
            gc.freeze()
            if measure in ("opcodes", "adaptive"):
                count = opcodes if measure == "opcodes" else adaptive
                print(json.dumps({"name": name, "opcodes": count(work, roots)}), flush=True)
                continue
            print(json.dumps({"name": name}), flush=True)
            if sys.stdin.readline().strip() != "go":
                return
            work()
            print("done", flush=True)
            sys.stdin.readline()  # "next": the parent has read the count
    print("{}", flush=True)


if __name__ == "__main__":
    main()
