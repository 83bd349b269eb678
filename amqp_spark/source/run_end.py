"""The end of a query run in the source's runner process: Spark's SIGTERM, handled so that
it cannot leave the process alive holding the queues' consumers.

Spark ends a run by SIGTERM to the runner (twice, a few milliseconds apart, measured) and
then forgets it: nothing waits for the process or kills it harder. The source closes its
connection then (acking the run's last batch first when Spark committed it; see
``classic_micro_batch``). Python runs a signal handler in the main thread, between two
bytecodes of whatever that thread was doing, and that thread is the one calling the reader:
when the signal lands inside a call (Spark stops a query while a ``latestOffset`` is
running, which under load takes longer), the interrupted code may hold a lock the close
needs (a channel's lock, which the close takes to mark the channel closed). A close in the
handler then waits forever for a lock its own thread holds: the process lives on with its
consumers, the broker keeps sending them the queue's new messages, and a restarted query
sees none of them until the broker drops the connection for missed heartbeats (the
client's I/O thread is stuck behind the same lock): a minute or more on RabbitMQ.

So (``RunEnd``):

* a SIGTERM between two calls (the usual case: the runner waits for Spark's next call)
  ends the run at once in the handler: nothing is held;
* a SIGTERM inside a call (``RunEnd.call``) is noted, and the run ends when that call
  returns, with every lock released;
* either way the process is ended ``grace`` seconds after the signal at the latest
  (SIGKILL: the kernel closes the sockets, the broker requeues what was not acked), should
  the end or the interrupted call not finish.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar, cast

log = logging.getLogger("amqp_spark.source")

#: How long the run's end may take after SIGTERM (a call to finish, the last batch to be
#: acked, the connection to close: the client waits at most 5 s for close-ok and 5 s for
#: its I/O thread) before the process is killed.
END_GRACE_SECONDS = 15.0

Method = TypeVar("Method", bound=Callable[..., Any])


class RunEnd:
    """Ends the run at SIGTERM by calling ``stop`` when no call of the reader is in progress
    (see the module docstring), then passes the signal on to the handler there was before
    (by default: the process ends). Holds no resources until ``install``: a reader carrying
    one is still pickled to the executors."""

    def __init__(self, grace: float = END_GRACE_SECONDS) -> None:
        self._grace = grace
        self._stop: Callable[[], None] | None = None
        self._previous: Any = None
        self._calls = 0  #: reader calls in progress on the main thread (nested: stop in one)
        self._signal: tuple[int, FrameType | None] | None = None  #: the SIGTERM, once it came
        self._ended = False

    @property
    def installed(self) -> bool:
        return self._stop is not None

    def install(self, stop: Callable[[], None]) -> None:
        """Hook SIGTERM to end the run with ``stop``. Outside the main thread there is
        nothing to hook (``stop()`` still closes when called)."""
        self._stop = stop
        with contextlib.suppress(ValueError):
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """A call of the reader's: a SIGTERM that lands in it ends the run when it returns."""
        self._calls += 1
        try:
            yield
        finally:
            self._calls -= 1
            if self._signal is not None and not self._calls:
                self._end()

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        if self._signal is not None:
            return  # Spark sends it twice: the first one ends the run
        self._signal = (signum, frame)
        if not callable(self._previous):  # the process is to end: make sure it does
            deadline = threading.Timer(self._grace, self._past_grace)
            deadline.daemon = True
            deadline.start()
        if not self._calls:
            self._end()

    def _past_grace(self) -> None:
        log.warning(
            "amqp source: the run's end took more than %s s after SIGTERM: killing the runner "
            "(the broker requeues what was not acked)",
            self._grace,
        )
        os.kill(os.getpid(), signal.SIGKILL)

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        assert self._stop is not None and self._signal is not None
        try:
            self._stop()
        finally:  # a failed end still ends the process
            if callable(self._previous):
                self._previous(*self._signal)
            else:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)


def runner_call(method: Method) -> Method:
    """A reader method Spark calls in the runner: a SIGTERM landing in it waits for its end
    (the reader holds its ``RunEnd`` as ``_run_end``)."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._run_end.call():
            return method(self, *args, **kwargs)

    return cast("Method", call)
