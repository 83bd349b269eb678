"""A channel: synchronous requests and deliveries; publishing with confirms is its base
``Publishing`` (``publishing.py``). It speaks to its connection through ``abc.ChannelHost``.

Methods are looked up by name in the connection's spec, so the same code speaks 0-9-1, 0-9
and 0-8 wherever those versions share a method. Replies are matched to requests by the
spec's ``<response>`` lists, in order (a FIFO per channel: the server answers a channel's
synchronous requests in the order it received them).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from amqp_protocol import Method, Properties
from amqp_protocol.events import (
    ContentReceived,
    DeliveriesReceived,
    DeliveryColumns,
    MethodReceived,
)

from .abc import ChannelHost
from .confirms import ConfirmTracker
from .delivery import Delivery
from .exceptions import (
    ChannelClosed,
    ClientError,
    ClientTimeout,
    ConsumerCancelled,
)
from .publishing import Publishing

if TYPE_CHECKING:
    # The methods of every version the client speaks; told apart by name at run time, so
    # that a 0-9-1 client does not import the other versions' generated modules.
    from amqp_protocol.generated.any_version import (
        BasicCancel,
        BasicDeliver,
        ChannelClose,
        ChannelFlow,
    )

log = logging.getLogger(__name__)

#: Default bound of every wait on a channel (replies, confirms, room to publish).
DEFAULT_TIMEOUT = 30.0
#: Optional field-table arguments of declare, bind and consume.
Arguments = dict[str, Any] | None


def expected_responses(method: Method) -> frozenset[str]:
    """The replies the server sends to ``method``: the spec's ``<response>`` list, or the
    ``-ok`` method of the same name when the XML omits it (0-9-1's basic.recover, whose
    recover-ok RabbitMQ sends); empty for no-wait requests and asynchronous methods."""
    if getattr(method, "no_wait", False):
        return frozenset()
    responses = method.responses()
    if not responses and method.SPEC.has_method(f"{method.NAME}-ok"):
        responses = (f"{method.NAME}-ok",)
    return frozenset(responses)


@dataclass(slots=True)
class Request:
    """A synchronous request waiting for its reply."""

    responses: frozenset[str]
    reply: tuple[Any, Properties | None, bytes] | None = None


class PendingReply:
    """The reply to a request sent with ``Channel.request_later``."""

    def __init__(self, channel: Channel, request: Request) -> None:
        self._channel = channel
        self._request = request

    def result(self) -> Any | None:
        """The reply method once it has arrived, None until then. Raises the channel's
        error when the channel closed first."""
        return self._channel.reply_to(self._request)


class Channel(Publishing):
    """An open AMQP channel; obtain one with ``Connection.channel()``. Offers its
    connection ``abc.ChannelPeer``."""

    def __init__(self, connection: ChannelHost, number: int) -> None:
        self.connection = connection
        self.number = number
        self.spec = connection.spec
        self.timeout = DEFAULT_TIMEOUT  #: bound of each wait for a reply or for room to publish
        self._lock = threading.Lock()
        # What callers wait for, one condition each on the channel's lock, so that the I/O
        # thread wakes only the callers whose wait it ends: a reply to a request, a
        # delivery (or a cancel), room to publish (confirms settled, flow resumed, the
        # connection unblocked) or every confirm.
        self._replied = threading.Condition(self._lock)
        self._arrived = threading.Condition(self._lock)
        self._settled = threading.Condition(self._lock)
        self._requests: deque[Request] = deque()
        self._deliveries: deque[Delivery] = deque()
        #: Deliveries as columns, once ``deliver_as_columns`` was called.
        self._runs: deque[DeliveryColumns] = deque()
        self._server_cancelled: list[str] = []
        self._consumers: set[str] = set()
        self._error: ClientError | None = None
        self._deliver = cast("type[BasicDeliver]", self.spec.method("basic.deliver"))
        self._init_publishing()

    def __repr__(self) -> str:
        state = "open" if self._error is None else "closed"
        return f"<amqp_spark.client.Channel {self.number} {state}>"

    @property
    def is_open(self) -> bool:
        return self._error is None

    # -- requests -----------------------------------------------------------------------------

    def _method(self, name: str, **fields: Any) -> Method:
        """Build ``name`` of our spec; fields this version lacks are dropped when empty (0-8
        has no consume arguments, ...) and refused when set."""
        try:
            cls = self.spec.method(name)
        except KeyError:
            raise ClientError(f"AMQP {self.spec.label} has no method {name}") from None
        missing = [k for k, v in fields.items() if k not in cls.FIELD_NAMES and v]
        if missing:
            raise ClientError(f"AMQP {self.spec.label}'s {name} has no field(s) {missing}")
        return cls(**{k: v for k, v in fields.items() if k in cls.FIELD_NAMES})

    def _call(self, name: str, **fields: Any) -> Any:
        """Send a request; wait for its reply when it has one. Returns the reply method."""
        reply = self._request(self._method(name, **fields))
        return None if reply is None else reply[0]

    def _call_with(self, name: str, arguments: dict[str, Any]) -> Any:
        """``_call`` with a public method's ``locals()``: those methods name their parameters
        after the spec's fields, so their arguments pass through as they are."""
        return self._call(name, **{k: v for k, v in arguments.items() if k != "self"})

    def request_later(self, name: str, **fields: Any) -> PendingReply:
        """Send the synchronous method ``name`` and return at once, with the reply to come.

        For questions whose answer may wait behind a long run of deliveries on the
        connection (a queue's depth asked while a consumer's window streams in): the
        caller goes on and reads the answer when it is there."""
        method = self._method(name, **fields)
        request = Request(expected_responses(method))
        if not request.responses:
            raise ClientError(f"{name} has no reply to wait for")
        self._send_request(method, request)
        return PendingReply(self, request)

    def _send_request(self, method: Method, request: Request) -> None:
        def enqueue() -> None:
            with self._lock:
                self._check_open()
                self._requests.append(request)

        self.connection.send(self.connection.encode_method(self.number, method), enqueue)

    def _request(self, method: Method) -> tuple[Any, Properties | None, bytes] | None:
        request = Request(expected_responses(method))
        if not request.responses:
            self.connection.send(
                self.connection.encode_method(self.number, method), self._check_open
            )
            return None
        self._send_request(method, request)
        with self._lock:
            self._replied.wait_for(
                lambda: request.reply is not None or self._error is not None, self.timeout
            )
            if request.reply is not None:
                return request.reply
            self._check_open()
        raise ClientTimeout(
            f"no reply to {method.NAME} on channel {self.number} in {self.timeout}s"
        )

    def reply_to(self, request: Request) -> Any | None:
        """The reply method to ``request`` (sent with ``request_later``) once it has arrived,
        None until then; the channel's error when it closed first."""
        with self._lock:
            if request.reply is not None:
                return request.reply[0]
            self._check_open()
            return None

    def open(self) -> None:
        """channel.open and wait for open-ok (``Connection.channel()`` calls it)."""
        self._call("channel.open")

    def close(self) -> None:
        """Close the channel (channel.close, wait for close-ok). Idempotent."""
        if self._error is None:
            # Closed by the server or with the connection meanwhile: closed either way.
            with contextlib.suppress(ClientError):
                self._call("channel.close", reply_code=200, reply_text="Normal shutdown")
            self.mark_closed(ChannelClosed(200, "closed by the client"))
        self.connection.release_channel(self.number)

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- exchanges and queues -----------------------------------------------------------------

    def exchange_declare(
        self,
        exchange: str,
        exchange_type: str = "direct",
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Arguments = None,
    ) -> None:
        fields = locals()
        fields["type"] = fields.pop("exchange_type")
        self._call_with("exchange.declare", fields)

    def exchange_delete(self, exchange: str, if_unused: bool = False) -> None:
        self._call_with("exchange.delete", locals())

    def exchange_bind(
        self, destination: str, source: str, routing_key: str = "", arguments: Arguments = None
    ) -> None:
        self._call_with("exchange.bind", locals())

    def exchange_unbind(
        self, destination: str, source: str, routing_key: str = "", arguments: Arguments = None
    ) -> None:
        self._call_with("exchange.unbind", locals())

    def queue_declare(
        self,
        queue: str = "",
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: Arguments = None,
    ) -> Any:
        """Returns queue.declare-ok: ``.queue``, ``.message_count``, ``.consumer_count``."""
        return self._call_with("queue.declare", locals())

    def queue_bind(
        self, queue: str, exchange: str, routing_key: str = "", arguments: Arguments = None
    ) -> None:
        self._call_with("queue.bind", locals())

    def queue_unbind(
        self, queue: str, exchange: str, routing_key: str = "", arguments: Arguments = None
    ) -> None:
        self._call_with("queue.unbind", locals())

    def queue_purge(self, queue: str) -> int:
        """Returns how many messages were purged."""
        return int(self._call("queue.purge", queue=queue).message_count)

    def queue_delete(self, queue: str, if_unused: bool = False, if_empty: bool = False) -> int:
        """Returns how many messages the queue held."""
        return int(self._call_with("queue.delete", locals()).message_count)

    # -- consuming ----------------------------------------------------------------------------

    def basic_qos(
        self, prefetch_count: int = 0, prefetch_size: int = 0, global_: bool = False
    ) -> None:
        self._call_with("basic.qos", locals())

    def basic_consume(
        self,
        queue: str,
        no_ack: bool = False,
        exclusive: bool = False,
        consumer_tag: str = "",
        arguments: Arguments = None,
    ) -> str:
        """Start a consumer; its deliveries are buffered for ``next_delivery``. Returns its tag."""
        ok = self._call_with("basic.consume", locals())
        with self._lock:
            self._consumers.add(ok.consumer_tag)
        return str(ok.consumer_tag)

    def basic_cancel(self, consumer_tag: str) -> None:
        """Stop a consumer. Deliveries already buffered stay available."""
        self._call("basic.cancel", consumer_tag=consumer_tag)
        with self._lock:
            self._consumers.discard(consumer_tag)

    def next_delivery(self, timeout: float = 1.0) -> Delivery | None:
        """The next buffered delivery, waiting up to ``timeout`` seconds; None on timeout.

        Raises ``ConsumerCancelled`` once when the server cancelled consumers and nothing
        is buffered, and the channel's error once the channel is closed and drained."""
        with self._lock:
            if not self._deliveries:
                self._arrived.wait_for(
                    lambda: self._deliveries or self._server_cancelled or self._error is not None,
                    timeout,
                )
            return self._take_delivery()

    def drain_deliveries(self, max_count: int = 1000) -> list[Delivery]:
        """Up to ``max_count`` deliveries that have already arrived; never blocks. One
        round of the channel's lock, however many."""
        with self._lock:
            deliveries = self._deliveries
            if not deliveries:
                first = self._take_delivery()
                return [] if first is None else [first]
            if max_count >= len(deliveries):
                self._deliveries = deque()
                return list(deliveries)
            return [deliveries.popleft() for _ in range(max_count)]

    def deliver_as_columns(self) -> None:
        """From now on, hand this channel's deliveries over as columns (``drain_columns``,
        ``next_columns``), without a ``Delivery`` per message. Call before consuming."""
        self.connection.deliver_as_columns(self.number)

    def next_columns(self, timeout: float, max_count: int) -> list[DeliveryColumns]:
        """``drain_columns`` once a delivery is there, waiting up to ``timeout`` seconds for
        one (``[]`` on timeout); raises as ``next_delivery`` does."""
        with self._lock:
            if not self._runs:
                self._arrived.wait_for(
                    lambda: self._runs or self._server_cancelled or self._error is not None,
                    timeout,
                )
            return self._take_columns(max_count)

    def drain_columns(self, max_count: int) -> list[DeliveryColumns]:
        """The deliveries that have already arrived, at most ``max_count`` (the last run
        cut), as the runs they arrived in; never blocks. Raises as ``next_delivery`` does
        when none has arrived."""
        with self._lock:
            return self._take_columns(max_count)

    def _take_columns(self, max_count: int) -> list[DeliveryColumns]:
        runs = self._runs
        if not runs:
            self._check_consuming()
            return []
        taken: list[DeliveryColumns] = []
        count = 0
        while runs and count < max_count:
            run = runs[0]
            if count + len(run) > max_count:
                cut = max_count - count
                taken.append(run[:cut])
                runs[0] = run[cut:]
                break
            taken.append(runs.popleft())
            count += len(run)
        return taken

    def _take_delivery(self) -> Delivery | None:
        if self._deliveries:
            return self._deliveries.popleft()
        self._check_consuming()
        return None

    def _check_consuming(self) -> None:
        """Nothing is buffered: raise ``ConsumerCancelled`` once for the consumers the server
        cancelled, and the channel's error once it is closed."""
        if self._server_cancelled:
            tags, self._server_cancelled = self._server_cancelled, []
            raise ConsumerCancelled(tags)
        self._check_open()

    def basic_get(self, queue: str, no_ack: bool = False) -> Delivery | None:
        """One message from ``queue`` (``message_count``: how many remain), or None."""
        reply = self._request(self._method("basic.get", queue=queue, no_ack=no_ack))
        assert reply is not None
        m, properties, body = reply
        if m.NAME != "basic.get-ok":
            return None
        assert properties is not None
        return Delivery(
            "",
            m.delivery_tag,
            m.redelivered,
            m.exchange,
            m.routing_key,
            properties,
            body,
            m.message_count,
        )

    def basic_ack(self, delivery_tag: int, multiple: bool = False) -> None:
        self._call_with("basic.ack", locals())

    def basic_nack(self, delivery_tag: int, multiple: bool = False, requeue: bool = True) -> None:
        self._call_with("basic.nack", locals())

    def basic_reject(self, delivery_tag: int, requeue: bool = True) -> None:
        self._call_with("basic.reject", locals())

    def basic_recover(self, requeue: bool = True) -> None:
        self._call("basic.recover", requeue=requeue)

    # -- transactions and confirm mode ---------------------------------------------------------

    def tx_select(self) -> None:
        self._call("tx.select")

    def tx_commit(self) -> None:
        self._call("tx.commit")

    def tx_rollback(self) -> None:
        self._call("tx.rollback")

    def confirm_select(self) -> None:
        """Put the channel in confirm mode: the broker acks or nacks every publish."""
        self._call("confirm.select")
        with self._lock:
            if self._confirms is None:
                self._confirms = ConfirmTracker()

    # -- what the I/O thread delivers ---------------------------------------------------------

    def handle_events(
        self, events: list[MethodReceived | ContentReceived | DeliveriesReceived]
    ) -> None:
        """Called by the I/O thread with a run of methods (and contents) for this channel:
        one lock round for the run, one wake-up of the callers it concerns, then the answers
        the protocol demands, sent outside the lock (see the lock order in connection.py)."""
        to_answer = []
        deliver = self._deliver
        with self._lock:
            deliveries = self._deliveries
            buffered = len(deliveries) + len(self._runs)
            for event in events:
                if isinstance(event, DeliveriesReceived):
                    if self._error is None:
                        self._runs.append(event.columns)
                    continue
                m = event.method
                if isinstance(m, deliver) and self._error is None:
                    # A consumer's deliveries, the bulk of what arrives: straight to the buffer.
                    deliveries.append(
                        Delivery(
                            m.consumer_tag,
                            m.delivery_tag,
                            m.redelivered,
                            m.exchange,
                            m.routing_key,
                            event.properties,  # type: ignore[union-attr]
                            event.body,  # type: ignore[union-attr]
                        )
                    )
                    continue
                if isinstance(event, ContentReceived):
                    handled = self._route(m, event.properties, event.body)
                else:
                    handled = self._route(m, None, b"")
                if not handled:
                    to_answer.append(m)
            if len(self._deliveries) + len(self._runs) > buffered:
                self._arrived.notify_all()
            targets, confirms = self._settle_targets, self._confirms
            if targets and confirms is not None and confirms.outstanding <= max(targets):
                self._settled.notify_all()
        for method in to_answer:
            self._answer(method)

    def _route(self, m: Method, properties: Properties | None, body: bytes) -> bool:
        """Apply one received method (under the lock); False: it needs an answer. Wakes
        the callers waiting for a reply, a cancel or a flow change; deliveries and confirms
        wake theirs once per run (``handle_events``)."""
        name = m.NAME
        requests = self._requests
        if name == "channel.close":
            m = cast("ChannelClose", m)
            # Closed from now on: nothing after it on this channel may answer a request.
            self._close_under_lock(
                ChannelClosed(m.reply_code, m.reply_text, m.class_id, m.method_id)
            )
            return False
        if self._error is not None:
            pass  # the channel is closed: what follows the close is moot
        elif requests and name in requests[0].responses:
            requests.popleft().reply = (m, properties, body)
            self._replied.notify_all()
        elif name == "basic.ack" or name == "basic.nack":
            self._on_confirm(m, ack=name == "basic.ack")
        elif name == "basic.return":
            self._on_return(m, properties, body)
        elif name == "basic.cancel":
            m = cast("BasicCancel", m)
            self._consumers.discard(m.consumer_tag)
            self._server_cancelled.append(m.consumer_tag)
            self._arrived.notify_all()
            return bool(m.no_wait)
        elif name == "channel.flow":
            m = cast("ChannelFlow", m)
            self._flow_active = bool(m.active)
            self._settled.notify_all()
            return False
        else:
            log.warning("channel %d: ignoring unexpected %s", self.number, name)
        return True

    def _answer(self, m: Method) -> None:
        """Reply to a server-sent channel.close, channel.flow or basic.cancel."""
        method = self.spec.method
        with contextlib.suppress(ClientError):
            if m.NAME == "channel.close":
                self.connection.send_method(self.number, method("channel.close-ok")())
            elif m.NAME == "channel.flow":
                active = cast("ChannelFlow", m).active
                self.connection.send_method(self.number, method("channel.flow-ok")(active=active))
            elif m.NAME == "basic.cancel":
                tag = cast("BasicCancel", m).consumer_tag
                reply = method("basic.cancel-ok")(consumer_tag=tag)
                self.connection.send_method(self.number, reply)
        if m.NAME == "channel.close":
            self.connection.release_channel(self.number)

    def mark_closed(self, error: ClientError) -> None:
        """The channel is closed: wake every waiter with ``error``."""
        with self._lock:
            self._close_under_lock(error)

    def _close_under_lock(self, error: ClientError) -> None:
        if self._error is None:
            self._error = error
            self._requests.clear()
            for condition in (self._replied, self._arrived, self._settled):
                condition.notify_all()
