"""Publishing and publisher confirms: the part of a channel that writes messages.

``Publishing`` is a base of ``Channel``: the state it uses (the channel's lock and its
``_settled`` condition, the confirm tracker, flow) is the channel's own, so the hot path
(``basic_publish``) pays no hop to another object. The I/O thread settles confirms through
``_on_confirm`` / ``_on_return`` (under the channel's lock) and wakes the publishers waiting
for room; they wait in ``_wait_for_room`` with the bounds described there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from amqp_protocol import Method, Properties

from .abc import ChannelHost
from .confirms import ConfirmTracker
from .delivery import ReturnedMessage
from .exceptions import ClientError, ClientTimeout

if TYPE_CHECKING:
    from amqp_protocol.generated.any_version import BasicAck, BasicNack, BasicReturn

log = logging.getLogger(__name__)

#: How many encoded basic.publish payloads a channel keeps (exchange, routing key, mandatory).
_PUBLISH_PAYLOADS_CACHED = 1024
#: (routing_key, body, properties) as basic_publish_batch takes them.
BatchMessage = tuple[str, bytes, "Properties | Mapping[str, Any] | None"]


class Publishing:
    """basic.publish, alone and in batches, bounded by confirms in flight, channel.flow and
    connection.blocked; waiting for confirms. A base of ``Channel``, which owns the state."""

    connection: ChannelHost
    number: int
    timeout: float
    #: unconfirmed messages a publisher may have outstanding
    max_in_flight: int
    _lock: threading.Lock
    #: Publishers waiting for room and ``wait_for_confirms`` wait on it.
    _settled: threading.Condition
    _error: ClientError | None

    def _init_publishing(self) -> None:
        self.max_in_flight = 1000
        #: Per waiting publisher: the outstanding count at or below which it may go on.
        self._settle_targets: list[int] = []
        self._confirms: ConfirmTracker | None = None
        self._flow_active = True
        spec = self.connection.spec
        self._publish = spec.method("basic.publish")
        self._properties = spec.properties("basic")
        self._empty_property_list = self._properties().encode_list()
        #: Encoded basic.publish payloads by (exchange, routing key, mandatory).
        self._publish_payloads: dict[tuple[str, str, bool], bytes] = {}

    def _check_open(self) -> None:
        """Raise the channel's error once it is closed."""
        if self._error is not None:
            raise self._error

    @property
    def unconfirmed(self) -> int:
        """Messages published in confirm mode that the broker has not confirmed yet."""
        with self._lock:
            return 0 if self._confirms is None else self._confirms.outstanding

    def basic_publish(
        self,
        exchange: str,
        routing_key: str,
        body: bytes,
        properties: Properties | Mapping[str, Any] | None = None,
        mandatory: bool = False,
    ) -> int:
        """Publish one message; returns its confirm sequence number (0 without confirms).

        In confirm mode this blocks only while ``max_in_flight`` messages are unconfirmed."""
        content = (
            self._publish_payload(exchange, routing_key, mandatory),
            self._property_list(properties),
            body,
        )
        data = self.connection.encode_contents(self.number, self._publish.CLASS_ID, (content,))
        seqs = self._write_publishes(data, 1)
        return seqs[0] if seqs else 0

    def basic_publish_batch(
        self,
        exchange: str,
        messages: Iterable[BatchMessage],
        mandatory: bool = False,
    ) -> range:
        """Publish many messages with one write; returns their sequence numbers (an empty
        range without confirms). Waits until the whole batch fits in ``max_in_flight``
        (or nothing is outstanding, for a batch larger than that).

        The basic.publish method is encoded once per routing key, the empty property list
        once per channel, and all frames are joined once."""
        payloads: dict[str, bytes] = {}
        payload_of = payloads.get
        property_list = self._property_list
        contents = []
        for routing_key, body, properties in messages:
            payload = payload_of(routing_key)
            if payload is None:
                payload = payloads[routing_key] = self._publish_payload(
                    exchange, routing_key, mandatory
                )
            contents.append((payload, property_list(properties), body))
        if not contents:
            return range(0)
        data = self.connection.encode_contents(self.number, self._publish.CLASS_ID, contents)
        return self._write_publishes(data, len(contents))

    def _publish_payload(self, exchange: str, routing_key: str, mandatory: bool) -> bytes:
        """The encoded basic.publish arguments, cached (a bounded number of them)."""
        key = (exchange, routing_key, mandatory)
        payload = self._publish_payloads.get(key)
        if payload is None:
            if len(self._publish_payloads) >= _PUBLISH_PAYLOADS_CACHED:
                self._publish_payloads.clear()
            method = self._publish(exchange=exchange, routing_key=routing_key, mandatory=mandatory)
            payload = self._publish_payloads[key] = method.encode()
        return payload

    def _property_list(self, properties: Properties | Mapping[str, Any] | None) -> bytes:
        if properties is None:
            return self._empty_property_list
        if isinstance(properties, Properties):
            return properties.encode_list()
        return self._properties(**properties).encode_list()

    def _write_publishes(self, data: bytes, count: int) -> range:
        with self._lock:
            if not self._may_publish(count):
                self._wait_for_room(count)
            self._check_open()
        seqs = range(0)

        def register() -> None:
            nonlocal seqs
            with self._lock:
                self._check_open()
                if self._confirms is not None:
                    seqs = self._confirms.published(count)

        self.connection.send(data, register)
        return seqs

    def _may_publish(self, count: int) -> bool:
        if self._error is not None:
            return True
        if not self._flow_active or self.connection.blocked:
            return False
        confirms = self._confirms
        if confirms is None:
            return True
        outstanding = confirms.outstanding
        return outstanding == 0 or outstanding + count <= self.max_in_flight

    def _wait_for_room(self, count: int) -> None:
        """Under the lock: wait until ``count`` more messages may be published. The bound
        is ``connection.blocked_timeout`` while the server blocks the connection (a resource
        alarm may well begin while we wait for confirms), else ``timeout``, counted from
        the end of the block if there was one."""
        connection = self.connection
        began = time.monotonic()
        blocked_since: float | None = None
        target = max(0, self.max_in_flight - count)
        self._settle_targets.append(target)
        try:
            while not self._may_publish(count):
                now = time.monotonic()
                blocked = connection.blocked
                if blocked:
                    blocked_since = now if blocked_since is None else blocked_since
                    limit, since = connection.blocked_timeout, blocked_since
                else:
                    if blocked_since is not None:  # unblocked: confirms resume from now on
                        began, blocked_since = now, None
                    limit, since = self.timeout, began
                remaining = since + limit - now
                if remaining <= 0:
                    raise ClientTimeout(self._no_room_reason(blocked, limit))
                self._settled.wait(remaining)
        finally:
            self._settle_targets.remove(target)

    def _no_room_reason(self, blocked: bool, limit: float) -> str:
        if blocked:
            reason = self.connection.blocked_reason or "no reason given"
            return f"the server has blocked publishing on this connection for {limit}s ({reason})"
        if not self._flow_active:
            return f"the server stopped channel {self.number} (channel.flow) for {limit}s"
        outstanding = self._confirms.outstanding if self._confirms else 0
        return (
            f"no room to publish on channel {self.number} within {limit}s "
            f"({outstanding} unconfirmed)"
        )

    def wait_for_confirms(self, timeout: float = 30.0) -> None:
        """Wait until every message published so far is confirmed.

        Raises ``PublishNacked`` (sequence numbers) or ``PublishReturned`` (the returned
        messages) for what went wrong since the last call; ``ClientTimeout`` on timeout."""
        with self._lock:
            confirms = self._confirms
            if confirms is None:
                raise ClientError("wait_for_confirms needs confirm_select() first")
            self._settle_targets.append(0)
            try:
                settled = self._settled.wait_for(
                    lambda: confirms.outstanding == 0 or self._error is not None, timeout
                )
            finally:
                self._settle_targets.remove(0)
            if not settled:
                raise ClientTimeout(
                    f"{confirms.outstanding} message(s) still unconfirmed after {timeout}s"
                )
            self._check_open()
            failure = confirms.take_failure()
        if failure is not None:
            raise failure

    def settled_below(self) -> int:
        """Confirm mode: every message with a lower sequence number was acked or nacked (some
        above it may be too). Once the connection is lost, the messages from this one on
        are those the broker may not have stored; ``take_publish_failure`` tells whether it
        refused any of the others."""
        with self._lock:
            if self._confirms is None:
                raise ClientError("settled_below needs confirm_select() first")
            return self._confirms.settled_below

    def take_publish_failure(self) -> ClientError | None:
        """What was nacked or returned since the last ``wait_for_confirms`` (then
        forgotten), as the error it would raise; None when nothing was."""
        with self._lock:
            return None if self._confirms is None else self._confirms.take_failure()

    def wake_publishers(self) -> None:
        """The connection was blocked or unblocked: publishers waiting for room re-check."""
        with self._lock:
            self._settled.notify_all()

    def _on_confirm(self, m: Method, ack: bool) -> None:
        """Under the lock: a basic.ack (``ack``) or basic.nack from the server."""
        if self._confirms is not None:
            confirm = cast("BasicAck | BasicNack", m)
            self._confirms.confirmed(confirm.delivery_tag, confirm.multiple, ack=ack)

    def _on_return(self, m: Method, properties: Properties | None, body: bytes) -> None:
        """Under the lock: a mandatory message came back (basic.return)."""
        returned_method = cast("BasicReturn", m)
        assert properties is not None
        returned = ReturnedMessage(
            returned_method.reply_code,
            returned_method.reply_text,
            returned_method.exchange,
            returned_method.routing_key,
            properties,
            body,
        )
        if self._confirms is not None:
            self._confirms.returned(returned)
        else:
            log.warning(
                "channel %d: message returned (%d %s) without confirm mode",
                self.number,
                returned.reply_code,
                returned.reply_text,
            )
