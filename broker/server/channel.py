"""One AMQP channel on the server: its state, the exchange and queue operations, the basic,
confirm and tx methods.

Methods are dispatched by name through the handlers of the connection's dialect
(``dialect.py``), which build on ``CORE_HANDLERS`` (``core_handlers.py``: the exchange and
queue methods are answered there) and on the channel's public operations
(``abc.Channel``). Handlers raise ``AMQPError``s (the model raises RabbitMQ's errors); the
connection turns a soft one into channel.close and a hard one into connection.close, naming
the culprit method.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

from amqp_protocol import Method, errors
from amqp_protocol.generated.any_version import (
    BasicAck,
    BasicCancel,
    BasicConsume,
    BasicGet,
    BasicNack,
    BasicProperties,
    BasicPublish,
    BasicQos,
    BasicRecover,
    BasicRecoverAsync,
    BasicReject,
    ChannelClose,
    ChannelCloseOk,
    ChannelFlow,
    ConfirmSelect,
    ExchangeDeclare,
    QueueDeclare,
    TxCommit,
    TxRollback,
    TxSelect,
)
from amqp_protocol.values import encode_shortstr

from ..model.exchanges import Exchange, check_sender_selected, without_bcc
from ..model.message import Message, QueuedMessage, validate_expiration
from ..model.queue_arguments import consumer_priority
from ..model.queues import Consumer, Queue
from ..model.stats import MessageStats
from .abc import Connection, Unacked
from .dialect import Dialect
from .publisher_confirms import PublisherConfirms
from .transactions import Transaction


def _generated_tag(prefix: str) -> str:
    return prefix + base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


class ServerChannel:
    """Channel state; also the ``DeliverySink`` of its consumers."""

    def __init__(self, conn: Connection, channel_id: int, dialect: Dialect) -> None:
        self.conn = conn
        self.id = channel_id
        self.vhost = conn.vhost
        self.consumers: dict[str, Consumer] = {}
        self._tag_bytes: dict[Consumer, bytes] = {}
        self.unacked: dict[int, Unacked] = {}
        self.unacked_count = 0  #: unacked deliveries to consumers, for the channel-wide prefetch
        self._next_tag = 1
        self.prefetch = 0  #: basic.qos global=false: the limit of consumers created from now on
        self.channel_prefetch = 0  #: basic.qos global=true: shared by all consumers of the channel
        self.flow_active = True
        #: publisher confirms, once confirm.select made the channel confirm
        self.confirms: PublisherConfirms | None = None
        #: the open transaction, once tx.select made the channel transactional
        self.tx: Transaction | None = None
        self.last_queue: str | None = None
        self.closed = False
        self.stats = MessageStats()
        self.dialect = dialect
        self.handlers = dialect.channel_handlers
        #: The dialect's handlers of content-bearing methods with their content (basic.publish,
        #: and in 0-9 also the file, stream and tunnel contents), called by the connection.
        self.content_handlers = dialect.content_handlers
        self._delivery_limit = dialect.delivery_limit
        self._honours_immediate = dialect.honours_immediate
        self._alternates_chain = dialect.alternates_chain
        self.dialect_state = dialect.channel_state()

    @property
    def confirming(self) -> bool:
        return self.confirms is not None

    @property
    def transactional(self) -> bool:
        return self.tx is not None

    def send(self, method: Method) -> None:
        self.conn.send_method(self.id, method)

    def _m(self, name: str) -> Callable[..., Method]:
        return self.conn.spec.method(name)

    # -- DeliverySink -------------------------------------------------------------------------

    def can_deliver(self, consumer: Consumer) -> bool:
        if not (self.flow_active and self.conn.output.writable):
            return False
        if consumer.no_ack:
            return True
        if consumer.prefetch and consumer.unacked >= consumer.prefetch:
            return False
        limit = self._delivery_limit
        if limit is not None and not limit(self):
            return False
        return not self.channel_prefetch or self.unacked_count < self.channel_prefetch

    def track_delivery(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> int:
        """A new delivery tag; the delivery awaits its ack unless the consumer is no-ack."""
        tag = self._next_tag
        self._next_tag = tag + 1
        stats, queue_stats = self.stats, queue.stats
        if not consumer.no_ack:
            self.unacked[tag] = (consumer, queue, entry)
            consumer.unacked += 1
            self.unacked_count += 1
            stats.deliver += 1
            queue_stats.deliver += 1
        else:
            stats.deliver_no_ack += 1
            queue_stats.deliver_no_ack += 1
        if entry.redelivered:
            stats.redeliver += 1
            queue_stats.redeliver += 1
        return tag

    def track_get(self, queue: Queue, entry: QueuedMessage, no_ack: bool) -> int:
        """A new delivery tag for ``entry`` taken with a get (basic.get, 0-9 message.get):
        settled at once if no-ack, else awaiting its ack and counted by its queue until
        then (``Queue.gets_unsettled``)."""
        tag = self._next_tag
        self._next_tag = tag + 1
        if no_ack:
            queue.settle(entry)
            self.stats.get_no_ack += 1
            queue.stats.get_no_ack += 1
        else:
            self.unacked[tag] = (None, queue, entry)
            queue.gets_unsettled += 1
            self.stats.get += 1
            queue.stats.get += 1
        if entry.redelivered:
            self.stats.redeliver += 1
            queue.stats.redeliver += 1
        return tag

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None:
        tag = self.track_delivery(consumer, queue, entry)
        self.conn.output.send_delivery(
            self.id, self._tag_bytes[consumer], tag, entry.redelivered, queue.as_delivered(entry)
        )

    def consumer_cancelled(self, consumer: Consumer) -> None:
        self.consumers.pop(consumer.tag, None)
        self._tag_bytes.pop(consumer, None)
        if self.conn.client_capability("consumer_cancel_notify"):
            self.send(self._m("basic.cancel")(consumer_tag=consumer.tag, no_wait=True))

    # -- dispatch -----------------------------------------------------------------------------

    def handle(self, method: Method) -> None:
        handler = self.handlers.get(type(method))
        if handler is None:
            raise errors.NotImplemented_(f"NOT_IMPLEMENTED - {method.NAME} is not supported")
        self.conn.access.check(method, self.last_queue)
        handler(self, method)

    def move_to(self, conn: Connection, channel_id: int) -> None:
        """Carry on as channel ``channel_id`` of ``conn`` (the 0-10 draft's session.resume
        attaches a suspended session, with its consumers and unacknowledged deliveries, to a
        channel of another connection to the same virtual host)."""
        self.conn = conn
        self.id = channel_id

    def redispatch(self) -> None:
        """Something that limited deliveries changed: let this channel's queues push again."""
        for queue in {c.queue for c in self.consumers.values()}:
            queue.dispatch()

    def teardown(self) -> None:
        """The channel is closing: cancel consumers, requeue everything unacknowledged."""
        if self.closed:
            return
        # Confirms owed go out before the channel.close or close-ok that follows, never
        # after it, as RabbitMQ 4 sends them (measured on 4.0.5: three publishes and a
        # channel.close in one write get three acks, then close-ok; three publishes, the
        # third to a missing exchange, get two acks, then the 404).
        self.flush_confirms()
        self.closed = True
        self.dialect.channel_closing(self)
        for consumer in list(self.consumers.values()):
            consumer.queue.remove_consumer(consumer)
        self.consumers.clear()
        # Settlements of an uncommitted transaction never happened.
        held = [] if self.tx is None else self.tx.drop_settles()
        self._requeue([*self.unacked.values(), *held])
        self.unacked.clear()
        self.conn.stats.add(self.stats)

    # -- channel ------------------------------------------------------------------------------

    def _channel_close(self, m: ChannelClose) -> None:
        self.teardown()
        self.send(self._m("channel.close-ok")())
        self.conn.forget_channel(self.id)

    def _channel_close_ok(self, m: ChannelCloseOk) -> None:
        self.conn.forget_channel(self.id)

    def _channel_flow(self, m: ChannelFlow) -> None:
        self.flow_active = m.active
        self.send(self._m("channel.flow-ok")(active=self.flow_active))
        if self.flow_active:
            self.redispatch()

    def _ignore(self, m: Method) -> None:
        pass

    # -- exchange -----------------------------------------------------------------------------

    def declare_exchange(self, m: ExchangeDeclare, *, durable: bool, auto_delete: bool) -> None:
        """exchange.declare, the exchange durable and auto-deleted as ``durable`` and
        ``auto_delete`` say (0-9 keeps an existing exchange's)."""
        self.vhost.declare_exchange(
            m.exchange,
            m.type,
            passive=m.passive,
            durable=durable,
            auto_delete=auto_delete,
            internal=m.internal,
            arguments=m.arguments,
        )
        if not m.no_wait:
            self.send(self._m("exchange.declare-ok")())

    # -- queue --------------------------------------------------------------------------------

    def queue_name(self, name: str) -> str:
        """The name of the queue a method names; "" means the last declared on this channel."""
        if name:
            return name
        if self.last_queue is None:
            raise errors.NotFound("NOT_FOUND - no previously declared queue")
        return self.last_queue

    def queue_named(self, name: str) -> Queue:
        """The queue a method names; "" means the queue last declared on this channel."""
        return self.vhost.queue(self.queue_name(name), self.conn)

    def declare_queue(self, m: QueueDeclare, *, durable: bool, auto_delete: bool) -> Queue:
        """queue.declare, without its reply, the queue durable and auto-deleted as
        ``durable`` and ``auto_delete`` say (0-9 keeps an existing queue's); the queue
        becomes the channel's last declared."""
        q = self.vhost.declare_queue(
            m.queue,
            owner=self.conn,
            passive=m.passive,
            durable=durable,
            exclusive=m.exclusive,
            auto_delete=auto_delete,
            arguments=m.arguments,
            classic_refuses_delivery_limit=self.dialect.refuses_classic_delivery_limit,
        )
        self.last_queue = q.name
        return q

    @contextlib.contextmanager
    def unbinding(self) -> Iterator[None]:
        """In 0-9-1 (``Dialect.unbind_missing_is_ok``) an unbind whose queue or exchange is
        missing is answered unbind-ok, as RabbitMQ 4 does (measured on 4.0.5: after an
        auto-delete queue or exchange went, as aio-pika's RPC pattern and its
        exchange-to-exchange tests unbind at their end);
        0-9 and 0-8 keep their spec's 404."""
        try:
            yield
        except errors.NotFound:
            if not self.dialect.unbind_missing_is_ok:
                raise

    # -- basic: consuming ---------------------------------------------------------------------

    def _basic_qos(self, m: BasicQos) -> None:
        if m.prefetch_size:
            raise errors.NotImplemented_(f"NOT_IMPLEMENTED - prefetch_size!=0 ({m.prefetch_size})")
        self.qos(m.prefetch_count, m.global_)

    def qos(self, prefetch_count: int, global_: bool) -> None:
        """basic.qos's prefetch count, for the channel (``global_``) or its next consumers."""
        if global_:
            self.channel_prefetch = prefetch_count
        else:
            self.prefetch = prefetch_count
        self.send(self._m("basic.qos-ok")())
        self.redispatch()

    def _basic_consume(self, m: BasicConsume) -> None:
        q = self.queue_named(m.queue)
        tag = m.consumer_tag or _generated_tag("amq.ctag-")
        if tag in self.consumers:
            raise errors.NotAllowed(f"NOT_ALLOWED - attempt to reuse consumer tag '{tag}'")
        arguments = getattr(m, "arguments", None)  # 0-8's basic.consume has none
        priority = consumer_priority(q.name, self.vhost.name, arguments)
        consumer = Consumer(
            tag,
            q,
            self,
            no_ack=m.no_ack,
            exclusive=m.exclusive,
            priority=priority,
            prefetch=self.prefetch,
        )
        q.add_consumer(consumer, arguments)
        self.consumers[tag] = consumer
        self._tag_bytes[consumer] = encode_shortstr(tag)
        if not m.no_wait:
            self.send(self._m("basic.consume-ok")(consumer_tag=tag))
        q.dispatch()

    def _basic_cancel(self, m: BasicCancel) -> None:
        consumer = self.consumers.pop(m.consumer_tag, None)
        if consumer is not None:
            self._tag_bytes.pop(consumer, None)
            consumer.queue.remove_consumer(consumer)
        if not m.no_wait:
            self.send(self._m("basic.cancel-ok")(consumer_tag=m.consumer_tag))

    def _basic_get(self, m: BasicGet) -> None:
        q = self.queue_named(m.queue)
        entry = q.get()
        if entry is None:
            self.send(self._m("basic.get-empty")())
            return
        tag = self.track_get(q, entry, m.no_ack)
        msg = q.as_delivered(entry, fetched=True)
        get_ok = self._m("basic.get-ok")(
            delivery_tag=tag,
            redelivered=entry.redelivered,
            exchange=msg.exchange,
            routing_key=msg.routing_key,
            message_count=q.message_count,
        )
        self.conn.send_content(self.id, get_ok, msg.properties, msg.body, delivery_tag=tag)

    # -- basic: settling ----------------------------------------------------------------------

    def take_unacked(self, tag: int, multiple: bool) -> list[tuple[int, Unacked]]:
        """Remove and return the deliveries an ack/nack/reject names, by delivery tag."""
        unacked = self.unacked
        if multiple:
            tags = (
                list(unacked)
                if tag == 0
                else list(itertools.takewhile(tag.__ge__, unacked))  # t <= tag, in C
            )
            if not tags and tag != 0:
                raise errors.PreconditionFailed(f"PRECONDITION_FAILED - unknown delivery tag {tag}")
            return [(t, unacked.pop(t)) for t in tags]
        item = unacked.pop(tag, None)
        if item is None:
            raise errors.PreconditionFailed(f"PRECONDITION_FAILED - unknown delivery tag {tag}")
        return [(tag, item)]

    def release(self, items: list[Unacked]) -> set[Queue]:
        """Return prefetch credit for settled deliveries (a get's to its queue's count of
        unsettled gets); the queues that may now push more."""
        queues: set[Queue] = set()
        for consumer, queue, _ in items:
            if consumer is None:
                queue.gets_unsettled -= 1
            else:
                consumer.unacked -= 1
                self.unacked_count -= 1
            queues.add(queue)
        return queues

    def settle(self, action: str, items: list[Unacked]) -> None:
        if action == "ack":
            self.stats.ack += len(items)
            for _, queue, entry in items:
                queue.settle(entry)
                queue.stats.ack += 1
        elif action == "requeue":
            self._requeue(items)
        else:
            for _, queue, entry in items:
                queue.reject(entry)
        for queue in self.release(items):
            queue.dispatch()

    def _requeue(self, items: list[Unacked]) -> None:
        by_queue: dict[Queue, list[QueuedMessage]] = {}
        for _, queue, entry in items:
            by_queue.setdefault(queue, []).append(entry)
        if self.closed:
            self.release(items)
        for queue, entries in by_queue.items():
            if self.closed:
                queue.return_unacked(entries)
            else:
                queue.requeue(entries)

    def settle_or_hold(self, action: str, tag: int, multiple: bool) -> None:
        taken = self.take_unacked(tag, multiple)
        if self.tx is not None:
            self.tx.hold_settles(action, taken)
        else:
            self.settle(action, [item for _, item in taken])

    def _basic_ack(self, m: BasicAck) -> None:
        self.settle_or_hold("ack", m.delivery_tag, m.multiple)

    def _basic_nack(self, m: BasicNack) -> None:
        self.settle_or_hold("requeue" if m.requeue else "reject", m.delivery_tag, m.multiple)

    def _basic_reject(self, m: BasicReject) -> None:
        self.settle_or_hold("requeue" if m.requeue else "reject", m.delivery_tag, False)

    def _basic_recover(self, m: BasicRecover | BasicRecoverAsync) -> None:
        if not m.requeue:
            raise errors.NotImplemented_("NOT_IMPLEMENTED - requeue=false")
        items = list(self.unacked.values())
        self.unacked.clear()
        self.settle("requeue", items)
        if m.NAME == "basic.recover":
            self.send(self._m("basic.recover-ok")())

    # -- basic: publishing --------------------------------------------------------------------

    def basic_publish(self, m: BasicPublish, properties: BasicProperties, body: bytes) -> None:
        """basic.publish with its content. The immediate flag is refused (as RabbitMQ does)
        unless the dialect honours it (``Dialect.honours_immediate``): then its handler
        comes here only once it found a consumer ready."""
        if m.immediate and not self._honours_immediate:
            raise errors.NotImplemented_("NOT_IMPLEMENTED - immediate=true")
        self.conn.access.check(m)
        exchange = self.vhost.exchange(m.exchange)
        if exchange.internal:
            raise errors.AccessRefused(
                f"ACCESS_REFUSED - cannot publish to internal exchange '{m.exchange}' "
                f"in vhost '{self.vhost.name}'"
            )
        if not validate_expiration(properties.expiration):
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - invalid expiration '{properties.expiration}'"
            )
        headers = properties.headers  # as published: its CC and BCC keys route too
        blind_keys: tuple[str, ...] = ()
        if headers:
            check_sender_selected(headers)
            self.conn.access.require_sender_selected(m.exchange, headers)
            properties, blind_keys = without_bcc(properties)  # dead-lettering routes by them
        else:
            headers = {}
        message = Message(m.exchange, m.routing_key, properties, body, blind_keys=blind_keys)
        self.conn.published(len(body))
        if self.tx is not None:
            self.tx.publishes.append((exchange, message, m.mandatory, headers))
        else:
            self._enqueue(exchange, message, m.mandatory, headers)

    def _enqueue(
        self, exchange: Exchange, message: Message, mandatory: bool, headers: dict[str, Any]
    ) -> bool:
        """Route by the headers as published and enqueue; True when the store journaled
        the message."""
        queues = self.vhost.route(exchange, message.routing_key, headers, self._alternates_chain)
        accepted, journaled = True, False
        confirms = self.confirms
        self.stats.publish += 1
        exchange.stats.publish_in += 1
        if not queues:
            if mandatory:
                returned = self._m("basic.return")(
                    reply_code=312,
                    reply_text="NO_ROUTE",
                    exchange=message.exchange,
                    routing_key=message.routing_key,
                )
                self.conn.send_content(self.id, returned, message.properties, message.body)
        else:
            token = None if confirms is None else (confirms, confirms.next_seq)
            journaled = self.vhost.store.message_routed(message, queues, token)
            exchange.stats.publish_out += 1
            for q in queues:
                q.stats.publish += 1
                if not q.publish(message):
                    accepted = False
                if q.buffers_publishes and confirms is not None:
                    confirms.buffered_by(q)
        if confirms is not None:
            confirms.published(accepted, journaled)
        return journaled

    def flush_confirms(self) -> None:
        """Send the confirms owed (``PublisherConfirms.flush``)."""
        if self.confirms is not None:
            self.confirms.flush()

    def _confirm_select(self, m: ConfirmSelect) -> None:
        if self.tx is not None:
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - cannot switch from tx to confirm mode"
            )
        if self.confirms is None:
            self.confirms = PublisherConfirms(self, self.stats)
        if not m.no_wait:
            self.send(self._m("confirm.select-ok")())

    # -- tx -----------------------------------------------------------------------------------

    def _tx_select(self, m: TxSelect) -> None:
        if self.confirms is not None:
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - cannot switch from confirm to tx mode"
            )
        if self.tx is None:
            self.tx = Transaction()
        self.send(self._m("tx.select-ok")())

    def _open_tx(self) -> Transaction:
        if self.tx is None:
            raise errors.PreconditionFailed("PRECONDITION_FAILED - channel is not transactional")
        return self.tx

    def require_tx(self) -> None:
        self._open_tx()

    def take_tx_requeues(self) -> list[Unacked]:
        """The open transaction's requeues, taken out of it: 0-9 requeues them elsewhere at
        commit."""
        return self._open_tx().take_requeues()

    def _tx_commit(self, m: TxCommit) -> None:
        publishes, settles = self._open_tx().take()
        journaled = [self._enqueue(*publish) for publish in publishes]
        for action, _, item in settles:
            self.settle(action, [item])
        if any(journaled) or settles:
            self.vhost.store.sync()  # commit-ok only once the transaction is on disk
        self.send(self._m("tx.commit-ok")())

    def _tx_rollback(self, m: TxRollback) -> None:
        self.unacked = self._open_tx().roll_back(self.unacked)
        self.send(self._m("tx.rollback-ok")())
