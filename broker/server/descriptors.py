"""The broker's file descriptors: the open-files limit it runs with, the connection limit
that follows from it, and what the listeners do when accept() finds no descriptor free.

A systemd machine starts services and logins with a soft ``RLIMIT_NOFILE`` of 1024 and a
hard one of 524288: the soft limit is kept low for programs that still use ``select()``,
and servers are expected to raise it themselves, as the JVM and nginx do. The broker raises
it to the hard limit at start (or sets ``open_files_limit``), and holds at most as many
connections as that leaves room for, by RabbitMQ's rule: 100 descriptors reserved for
files, 90% of the rest less 2 for sockets (RabbitMQ's ``sockets_total``: 829 of 1024).
``connection_max`` lowers that further.

Descriptors can still run out: stream segments, store files and, in process, whatever the
embedding program opens take them too. asyncio then stops watching the listener for a second
(``ACCEPT_RETRY_DELAY``) and reports the failed accept() to the loop's exception handler,
which by default logs an error with a traceback at every retry while the connections wait
in the listen backlog, their clients hanging in the handshake. ``AcceptGuard`` refuses them
instead, and ``RefusalLog`` reports refusals once per interval, with counts.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import socket
from collections.abc import Callable
from typing import Any

log = logging.getLogger("broker")

#: Descriptors left for files (store, stream segments, logs): RabbitMQ's reserve.
RESERVED_FOR_FILES = 100
#: Seconds between two reports of refused connections while refusals last.
REPORT_INTERVAL = 10.0
#: Connections refused at most per failed accept(): asyncio's own accept batch.
REFUSE_BATCH = 100


class OpenFilesLimitError(ValueError):
    """``open_files_limit`` asks for a limit the process may not set."""


def set_open_files_limit(wanted: int) -> int:
    """Set the soft ``RLIMIT_NOFILE`` to ``wanted``, or to the hard limit when ``wanted`` is
    0, and return it. A value above the hard limit raises the hard limit too, which needs
    privileges (root, or ``CAP_SYS_RESOURCE``); when it cannot be set,
    ``OpenFilesLimitError`` says why and what to do."""
    if wanted < 0:
        raise OpenFilesLimitError(
            f"open_files_limit = {wanted}: a number of descriptors, or 0 for the hard limit"
        )
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = wanted or hard
    if limit != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, max(limit, hard)))
        except (ValueError, OSError) as e:
            raise OpenFilesLimitError(
                f"open_files_limit = {wanted}: cannot set the open files limit to {limit} "
                f"(soft limit {soft}, hard limit {hard}): {e}. Raise the hard limit "
                "(ulimit -Hn, systemd's LimitNOFILE=) or ask for at most it"
            ) from None
    log.info("open files limit %d (soft limit was %d, hard limit %d)", limit, soft, hard)
    return limit


def connection_limit(open_files: int, connection_max: int) -> int:
    """The most connections held with ``open_files`` descriptors: RabbitMQ's
    ``sockets_total`` (at least 1), or ``connection_max`` when lower and not 0. A
    ``connection_max`` above what the descriptors allow is logged and not used."""
    sockets = max(1, int(max(2, open_files - RESERVED_FOR_FILES) * 0.9 - 2))
    if connection_max and connection_max <= sockets:
        return connection_max
    if connection_max:
        log.warning(
            "connection_max = %d is more than an open files limit of %d allows: "
            "at most %d connections",
            connection_max,
            open_files,
            sockets,
        )
    return sockets


class RefusalLog:
    """Refused connections, logged once per ``interval`` however fast they come: the first
    refusal at once, then how many since, and a line when a connection is accepted again.
    ``clock`` is the event loop's (``loop.time``)."""

    def __init__(self, clock: Callable[[], float], interval: float = REPORT_INTERVAL) -> None:
        self._clock = clock
        self._interval = interval
        #: why connections are refused now; None while they are accepted
        self._reason: str | None = None
        self._began = self._last_report = 0.0
        self._since_report = 0
        self._total = 0

    def refused(self, reason: str, count: int = 1) -> None:
        now = self._clock()
        self._since_report += count
        self._total += count
        if self._reason is None:
            self._began = now
            log.warning(
                "refusing new connections: %s; connections already open are served "
                "(reported again every %g s while this lasts)",
                reason,
                self._interval,
            )
        elif reason != self._reason or now >= self._last_report + self._interval:
            log.warning(
                "still refusing new connections: %s (%d refused in the last %.0f s)",
                reason,
                self._since_report,
                now - self._last_report,
            )
        else:
            return
        self._reason = reason
        self._last_report = now
        self._since_report = 0

    def accepted(self) -> None:
        """A connection was accepted: refusals, if any, are over."""
        if self._reason is None:
            return
        log.warning(
            "accepting new connections again, after refusing %d in %.0f s: %s",
            self._total,
            self._clock() - self._began,
            self._reason,
        )
        self._reason = None
        self._total = self._since_report = 0


class AcceptGuard:
    """The event loop's exception handler while the broker runs: an accept() that failed
    with EMFILE or ENFILE refuses the connections waiting on that listener and is reported
    through ``refusals``; any other report goes to the handler it replaced.

    Refusing needs a descriptor, so one is held in reserve (libuv's "EMFILE trick"): it is
    closed, each waiting connection accepted and closed at once (its client sees the socket
    close instead of a handshake that never comes), and the reserve taken back. asyncio
    resumes the listener a second later; the first accept() that succeeds ends the refusals.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, refusals: RefusalLog, open_files: int
    ) -> None:
        self._loop = loop
        self._refusals = refusals
        self._open_files = open_files
        self._previous = loop.get_exception_handler()
        self._reserve = _take_reserve()
        loop.set_exception_handler(self._handle)

    def close(self) -> None:
        """Put the previous handler back and free the reserve."""
        if self._loop.get_exception_handler() == self._handle:
            self._loop.set_exception_handler(self._previous)
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None

    def _handle(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        listener = context.get("socket")
        if (
            isinstance(exc, OSError)
            and exc.errno in (errno.EMFILE, errno.ENFILE)
            and listener is not None
        ):
            reason = f"out of file descriptors ({exc.strerror}, limit {self._open_files})"
            self._refusals.refused(reason, self._refuse_waiting(listener.fileno()))
        elif self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)

    def _refuse_waiting(self, listener_fd: int) -> int:
        """Accept and close the connections waiting on the listener; how many there were."""
        if self._reserve is None:
            self._reserve = _take_reserve()  # one may be free again
            if self._reserve is None:
                return 0
        os.close(self._reserve)
        # A socket object over the listener's own descriptor (no dup: that would need one).
        listener = socket.socket(fileno=listener_fd)
        refused = 0
        try:
            for _ in range(REFUSE_BATCH):
                try:
                    conn, _ = listener.accept()
                except OSError:  # none waiting (EAGAIN), or the freed descriptor taken
                    break
                conn.close()
                refused += 1
        finally:
            listener.detach()
            self._reserve = _take_reserve()
        return refused


def _take_reserve() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
