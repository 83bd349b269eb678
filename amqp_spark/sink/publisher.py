"""Publishing one task's messages: pipelined, with publisher confirms, failing loudly.

A task's rows are committed to Spark only when ``finish()`` returns, that is when the
broker has confirmed every message. Anything else (a nack, a mandatory message returned
unroutable, a closed channel, a lost connection no node of ``addresses`` replaces) raises
``PublishFailed`` saying which and how many, so Spark fails the task and the batch is
retried: at-least-once. A lost connection another node replaces is failed over (see
``PartitionPublisher``).

Connections are kept per executor Python worker (workers are reused across tasks) and a
fresh channel is opened per task.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from amqp_spark.client import (
    Channel,
    ChannelClosed,
    ClientError,
    ClientTimeout,
    Connection,
    ConnectionClosed,
    PublishNacked,
    PublishReturned,
    backoff,
    connect,
)
from amqp_spark.options import redact_uri

from .messages import ExchangeRun, Publish
from .settings import SinkSettings

log = logging.getLogger(__name__)

#: How long a publisher keeps waiting while the broker blocks the connection (a resource
#: alarm) before failing the task. Blocking slows the writer down; only this long an
#: alarm fails it (and Spark retries the batch).
BLOCKED_LIMIT_SECONDS = 600.0
#: How long to wait for the confirms of what is published when the connection is not
#: blocked: the broker is expected to confirm within seconds.
CONFIRM_TIMEOUT_SECONDS = 60.0

_connections: dict[str, Connection] = {}

R = TypeVar("R")


class PublishFailed(RuntimeError):
    """The task cannot be committed: says what went wrong and how many messages it hit."""


def connection_for(uri: str) -> Connection:
    """An open connection to ``uri``, reused across the tasks this Python worker runs."""
    conn = _connections.get(uri)
    if conn is None or not conn.is_open:
        conn = _connections[uri] = connect(
            uri, client_properties={"connection_name": "amqp-spark sink"}
        )
    return conn


def drop_connection(uri: str) -> None:
    """Forget (and close) the cached connection after a failure: the next task reconnects."""
    conn = _connections.pop(uri, None)
    if conn is not None:
        try:
            conn.close()
        except ClientError:
            log.debug("closing a failed connection", exc_info=True)


@dataclass(frozen=True)
class _Sent:
    """Messages published on the current channel, from confirm sequence number ``first``."""

    first: int
    exchange: str
    messages: Sequence[Publish]


class PartitionPublisher:
    """Publishes the messages of one task and waits for their confirms.

    Failover: the messages published but not yet confirmed are kept. When the connection is
    lost (its node died, say), the publisher connects again (the ``addresses`` rotation
    goes on to the next node; ``maxReconnectAttempts`` passes over the list, the usual
    backoff between them) and publishes them again, then goes on: nothing the broker had
    not confirmed is lost, and what it had stored without confirming yet arrives twice,
    under the same ``message_id``. The task fails only when no node answers (or without
    confirms, when nothing tells what arrived).
    """

    def __init__(self, settings: SinkSettings, where: str) -> None:
        self.settings = settings
        self.where = where  #: "partition 3 of batch 7 of query ..." for messages
        self.published = 0
        self.published_again = 0  #: messages published a second time after a failover
        self._failovers = 0
        #: What the current channel published and was not yet seen settled, oldest first.
        self._unsettled: deque[_Sent] = deque()
        self._checked_exchanges: set[str] = {""}  # the default exchange always exists
        self._chunk = max(1, min(1000, settings.max_in_flight // 4))
        try:
            self._channel = self._open_channel()
        except (ClientError, OSError) as e:
            drop_connection(settings.uri)
            raise self._failure(e) from e

    def _open_channel(self) -> Channel:
        """A channel (in confirm mode with ``confirm``) on this worker's connection, made
        again when it fails: the cached connection may have died since the last task
        (broker restart, idle timeout, a node gone) without the worker noticing yet."""
        error: BaseException | None = None
        for _ in backoff.attempts(self.settings.max_reconnect_attempts):
            try:
                channel = connection_for(self.settings.uri).channel()
                channel.timeout = CONFIRM_TIMEOUT_SECONDS  # also bounds the wait for room
                if self.settings.confirm:
                    channel.confirm_select()
                    channel.max_in_flight = self.settings.max_in_flight
                return channel
            except (ClientError, OSError) as e:
                error = e
                drop_connection(self.settings.uri)
        assert error is not None
        raise error

    def publish(self, runs: Sequence[ExchangeRun]) -> None:
        """Write the messages of ``runs`` in order; blocks only while too many confirms are
        outstanding or the broker blocks the connection."""
        try:
            exchanges = {run.exchange for run in runs}
            self._failing_over(functools.partial(self._check_exchanges, exchanges))
            for exchange, messages in runs:
                for start in range(0, len(messages), self._chunk):
                    chunk = messages[start : start + self._chunk]
                    self._failing_over(functools.partial(self._write, exchange, chunk))
                    self.published += len(chunk)
        except (ClientError, OSError) as e:
            self._abandon()
            raise self._failure(e) from e

    def finish(self) -> int:
        """Wait for every confirm and close the channel; returns how many were published."""

        def confirmed() -> None:
            if self.settings.confirm:
                self._while_blocked(
                    lambda: self._channel.wait_for_confirms(timeout=CONFIRM_TIMEOUT_SECONDS)
                )

        try:
            self._failing_over(confirmed)
            self._channel.close()
        except (ClientError, OSError) as e:
            self._abandon()
            raise self._failure(e) from e
        if self.published_again:
            log.warning(
                "amqp sink: %s published %d message(s) again after %d failover(s)",
                self.where,
                self.published_again,
                self._failovers,
            )
        return self.published

    def _write(self, exchange: str, messages: Sequence[Publish]) -> None:
        """Publish ``messages`` on the current channel, keeping them until confirmed."""
        seqs = self._while_blocked(
            functools.partial(
                self._channel.basic_publish_batch,
                exchange,
                messages,
                mandatory=self.settings.mandatory,
            )
        )
        if not self.settings.confirm:
            return
        self._unsettled.append(_Sent(seqs.start, exchange, messages))
        settled = self._channel.settled_below()
        while (
            self._unsettled
            and self._unsettled[0].first + len(self._unsettled[0].messages) <= settled
        ):
            self._unsettled.popleft()

    def _failing_over(self, action: Callable[[], None]) -> None:
        """Run ``action``; when the connection is lost meanwhile, fail over (see the class
        docstring) and run it again."""
        while True:
            try:
                return action()
            except ConnectionClosed as e:
                self._fail_over(e)

    def _fail_over(self, error: ConnectionClosed) -> None:
        """Connect again and publish again what the lost channel had not seen confirmed.
        Raises ``error`` without confirms, a nack or return that came before the loss, and
        the last connection error when no node answers."""
        while True:
            self._failovers += 1
            if not self.settings.confirm or self._failovers > (
                self.settings.max_reconnect_attempts + 1
            ):
                raise error
            lost = self._channel
            refused = lost.take_publish_failure()
            if refused is not None:
                raise refused
            settled = lost.settled_below()
            again = [
                (sent.exchange, sent.messages[max(0, settled - sent.first) :])
                for sent in self._unsettled
            ]
            log.warning(
                "amqp sink: %s lost its connection (%s); publishing %d unconfirmed message(s) "
                "again on the next node that answers",
                self.where,
                error,
                sum(len(messages) for _, messages in again),
            )
            drop_connection(self.settings.uri)
            self._unsettled.clear()
            self._channel = self._open_channel()
            try:
                for exchange, messages in again:
                    self._write(exchange, messages)
                    self.published_again += len(messages)
                return
            except ConnectionClosed as e:
                error = e

    def _check_exchanges(self, exchanges: set[str]) -> None:
        """Fail with a clear message on an exchange that does not exist, before publishing
        to it (publishing would close the channel with only a 404 to say why)."""
        for exchange in exchanges - self._checked_exchanges:
            try:
                self._channel.exchange_declare(exchange, "direct", passive=True)
            except ChannelClosed as e:
                raise PublishFailed(
                    f"amqp sink: exchange {exchange!r} cannot be published to on "
                    f"{redact_uri(self.settings.uri)}: {e} ({self.where}). Declare it first, "
                    "or fix the exchange option / column."
                ) from e
            self._checked_exchanges.add(exchange)

    def _while_blocked(self, action: Callable[[], R]) -> R:
        """Run ``action``; while it times out because the broker blocks the connection
        (nothing was sent then), wait and retry, up to BLOCKED_LIMIT_SECONDS."""
        connection = self._channel.connection
        deadline = time.monotonic() + BLOCKED_LIMIT_SECONDS
        while True:
            try:
                return action()
            except ClientTimeout:
                if not connection.blocked or time.monotonic() > deadline:
                    raise
                log.info(
                    "amqp sink: broker blocks publishing (%s); waiting", connection.blocked_reason
                )

    def _abandon(self) -> None:
        """After a failure: the channel may be half-used, drop the connection with it."""
        drop_connection(self.settings.uri)

    def _failure(self, error: BaseException) -> PublishFailed:
        published = f"{self.published} message(s) published by {self.where}"
        uri = redact_uri(self.settings.uri)
        if isinstance(error, PublishFailed):
            return error
        if isinstance(error, PublishNacked):
            text = f"the broker nacked {error.count} message(s) ({published})"
            if error.returned:
                text += f"; {error.returned} more were returned unroutable"
        elif isinstance(error, PublishReturned):
            first = error.returns[0]
            text = (
                f"{error.count} message(s) were returned unroutable (mandatory=true), first: "
                f"{first.reply_code} {first.reply_text}, exchange {first.exchange!r}, "
                f"routing key {first.routing_key!r} ({published})"
            )
        elif isinstance(error, ConnectionClosed):
            text = f"the connection to {uri} was lost or closed: {error} ({published})"
        elif isinstance(error, ChannelClosed):
            text = f"the broker closed the channel: {error} ({published})"
        elif isinstance(error, ClientTimeout):
            text = f"timed out: {error} ({published})"
        else:
            text = f"{type(error).__name__}: {error} ({published})"
        return PublishFailed(
            f"amqp sink: {text}. The batch is not committed; Spark retries it "
            "(at-least-once: consumers drop duplicates by message_id)."
        )
