"""A signal handler that closes the connection while the thread it interrupted is sending on
it (the source closes its connection at SIGTERM, which may land in a send): before, the
close waited forever for the send lock that thread held, so a stopped query's runner lived
on with its consumers and took the next run's messages. Now the close drops the socket at
once, the broker requeues what was not acked, and the interrupted send fails."""

from __future__ import annotations

import os
import signal
import time
from types import FrameType

import pytest

from amqp_spark.client import ClientError, connect


@pytest.mark.timeout(30)
def test_a_close_from_a_handler_that_interrupted_a_send_drops_the_connection_at_once(
    broker_url: str,
) -> None:
    conn = connect(broker_url)
    closed_after: list[float] = []

    def close_at_signal(signum: int, frame: FrameType | None) -> None:
        start = time.monotonic()
        conn.close(timeout=1)
        closed_after.append(time.monotonic() - start)

    previous = signal.signal(signal.SIGUSR1, close_at_signal)
    try:
        # The signal arrives while this thread is inside send, holding its lock.
        with pytest.raises(ClientError):
            conn.send(b"", prepare=lambda: os.kill(os.getpid(), signal.SIGUSR1))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert closed_after and closed_after[0] < 2.0
    assert not conn.is_open
