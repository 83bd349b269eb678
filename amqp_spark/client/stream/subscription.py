"""One subscription of a stream connection: the chunks the broker delivers, in order, and
the credit that lets it send more.

The broker sends one chunk per credit (RabbitMQ: ``Subscribe``'s credit, then each
``Credit``); a reader that grants a credit for every chunk it takes keeps ``credit`` chunks
in flight, which bounds the memory a slow reader holds to ``credit`` chunks (a chunk is at
most about a frame_max).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from .exceptions import StreamError, StreamTimeout


class ChunkDelivery(NamedTuple):
    """A delivered chunk: its bytes as ``Deliver`` carries them (header + data, see
    ``amqp_protocol.stream.chunk.parse_chunk``), and the stream's committed chunk id when
    the broker sent it (``Deliver`` v2; None with v1)."""

    chunk: memoryview
    committed_chunk_id: int | None


class Subscription:
    """Chunks of one ``Subscribe``; made by ``StreamClient.subscribe``. Thread-safe: the
    connection's reader thread adds, one reader takes."""

    def __init__(
        self,
        subscription_id: int,
        stream: str,
        address: str,
        send_credit: Callable[[int, int], None],
        unsubscribe: Callable[[int], None],
    ) -> None:
        self.subscription_id = subscription_id
        self.stream = stream
        #: ``host:port`` of the broker, for errors
        self.address = address
        self._send_credit = send_credit
        self._unsubscribe = unsubscribe
        self._chunks: deque[ChunkDelivery] = deque()
        self._ready = threading.Condition()
        self._error: StreamError | None = None
        self.active = True

    def __repr__(self) -> str:
        return f"<Subscription {self.subscription_id} to {self.stream!r}>"

    # The reader's side

    def next_chunk(self, timeout: float | None = None) -> ChunkDelivery:
        """The next chunk, waiting at most ``timeout`` seconds (None: no bound). Raises
        ``StreamTimeout`` when none came, and the subscription's error once it has ended
        and every chunk received before is taken."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._ready:
            while not self._chunks:
                if self._error is not None:
                    raise self._error
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise StreamTimeout(
                        self.address, f"no chunk of {self.stream!r} within {timeout} s"
                    )
                self._ready.wait(remaining)
            return self._chunks.popleft()

    def credit(self, chunks: int = 1) -> None:
        """Let the broker send ``chunks`` more chunks."""
        self._send_credit(self.subscription_id, chunks)

    def close(self) -> None:
        """Unsubscribe (the broker stops delivering; chunks in flight are dropped)."""
        if self.active:
            self.active = False
            self._unsubscribe(self.subscription_id)

    # The connection's side

    def deliver(self, delivery: ChunkDelivery) -> None:
        with self._ready:
            self._chunks.append(delivery)
            self._ready.notify()

    def end(self, error: StreamError) -> None:
        """No more chunks will come: ``next_chunk`` raises ``error`` once the queue is empty."""
        with self._ready:
            if self._error is None:
                self._error = error
            self.active = False
            self._ready.notify_all()
