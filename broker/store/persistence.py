"""The durable store behind the broker: ``broker.model.persistence.Persistence`` on a
``Store``, plus what the server does with it at startup (definitions, recovery) and
shutdown.

Messages: a persistent message routed to durable classic or quorum queues (a quorum queue:
any message) is journaled once, for all of them, before it is enqueued; its journal id
rides on the ``Message``. A queue acks its own (queue, message) when the message leaves it
for good. Acks of one event-loop turn go out as one record per queue. Confirms wait for the
journal: its writer thread reports committed tokens, which are ``(waiter, sequence number)``
pairs handed back to the waiter (a channel) on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import urllib.parse
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from . import records
from .errors import StoreError
from .journal import Journal
from .message_codec import decode_message, encode_message
from .spilled_entries import SpilledEntries
from .store import Store
from .topology import BindingDef, ExchangeDef, PermissionDef, QueueDef, UserDef

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.model.exchanges import Exchange
    from broker.model.message import Message
    from broker.model.queues import Queue
    from broker.model.vhost import VirtualHost

log = logging.getLogger("broker.store")

#: Seconds ``sync`` waits for the journal's fsync before it gives up.
SYNC_TIMEOUT = 30.0


class JournalWaiter(Protocol):
    """Who waits for journaled publishes (a channel with publisher confirms)."""

    def journal_done(self, sequence_numbers: list[int], ok: bool) -> None: ...


class DurableStore:
    durable = True

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.topology = store.topology
        self.loop = loop
        self.journal: Journal | None = None
        self._acks: dict[int, list[int]] = defaultdict(list)
        self._acks_scheduled = False
        #: the durable queues ``recover`` declared, until ``start`` expires their messages
        self._recovered_queues: list[Queue] = []
        #: recovered messages the restart returned past their queue's ``x-delivery-limit``,
        #: until ``start`` dead-letters them
        self._returned_past_limit: list[tuple[Queue, Message]] = []

    # -- startup and shutdown (the server calls these) ------------------------------------

    def merge_definitions(self, config: BrokerConfig) -> None:
        """Users, vhosts and permissions: the stored ones join the configuration's, and the
        configuration's are stored (they win for users both define)."""
        from broker.config import Permission, User

        t = self.topology
        for name, stored in t.users.items():
            if name not in config.users:
                permissions = {
                    p.vhost: Permission(p.configure, p.write, p.read)
                    for p in t.permissions.values()
                    if p.user == name
                }
                config.users[name] = User(
                    name, stored.password_hash, permissions=permissions, tags=[*stored.tags]
                )
        for user in config.users.values():
            t.users[user.name] = UserDef(user.name, user.password_hash, tuple(user.tags))
            for key in [k for k in t.permissions if k[0] == user.name]:
                del t.permissions[key]
            for vhost, p in user.permissions.items():
                t.permissions[(user.name, vhost)] = PermissionDef(
                    user.name, vhost, p.configure, p.write, p.read
                )
        config.vhosts = [*config.vhosts, *sorted(t.vhosts - set(config.vhosts))]
        t.vhosts.update(config.vhosts)
        self.store.save_topology()

    def recover(self, vhosts: dict[str, VirtualHost]) -> int:
        """Declare the stored exchanges, queues and bindings and put the queues' messages
        back; returns the number of messages recovered."""
        t = self.topology
        for (vhost, name), e in list(t.exchanges.items()):
            vhosts[vhost].declare_exchange(
                name,
                e.type,
                durable=True,
                auto_delete=e.auto_delete,
                internal=e.internal,
                arguments=e.arguments,
            )
        count = 0
        now_ms = time.time_ns() // 1_000_000
        deliveries = self.store.deliveries
        past_limit = self._returned_past_limit
        for (vhost, name), d in list(t.queues.items()):
            q = vhosts[vhost].declare_queue(
                name, owner=None, durable=True, auto_delete=d.auto_delete, arguments=d.arguments
            )
            restored = False
            for msg_id, journaled in self.store.recovered_journal_entries(d.queue_id):
                if journaled.class_id == records.BASIC_CLASS:
                    message = decode_message(journaled.message)
                    message.msg_id = msg_id
                    message.blind_keys = journaled.blind_keys
                    delivery_count = deliveries.delivery_count(d.queue_id, msg_id)
                    if q.past_delivery_limit(delivery_count):
                        # The restart returned it once too often: RabbitMQ dead-letters it.
                        past_limit.append((q, message))
                        continue
                    # The TTL counts from the publish (wall clock), as RabbitMQ's does.
                    age_ms = now_ms - journaled.published_ms if journaled.published_ms else 0
                    q.restore(
                        message,
                        max(0, age_ms) / 1000,
                        redelivered=deliveries.may_have_delivered(d.queue_id, msg_id),
                        delivery_count=delivery_count,
                    )
                else:
                    restore = _restorer(self.store.data_dir, journaled.class_id)
                    restore(vhosts[vhost], q, msg_id, journaled.message)
                count += 1
                restored = True
            if restored:
                self._recovered_queues.append(q)
        for b in list(t.bindings):
            vh = vhosts[b.vhost]
            dest = (vh.queues if b.destination_kind == "queue" else vh.exchanges).get(b.destination)
            if dest is not None:
                vh.bind(dest, b.source, b.routing_key, b.arguments)
        return count

    def start(self) -> None:
        """Start journaling (after ``recover``), then dead-letter the recovered messages the
        restart returned past their delivery limit (reason ``delivery_limit``) and expire
        those whose TTL ran out while the broker was down: dead-lettering them journals their
        copies and their removal, and their dead-letter exchanges are bound by now."""
        self.journal = self.store.start(self)
        past_limit, self._returned_past_limit = self._returned_past_limit, []
        for queue, message in past_limit:
            self.message_removed(queue, message)
            queue.dead_letter(message, "delivery_limit")
        recovered, self._recovered_queues = self._recovered_queues, []
        for queue in recovered:
            queue.expire()

    def close(self) -> None:
        """Write what is pending, stop the journal, unlock the data directory."""
        self._flush_acks()
        self.store.close()
        self.journal = None

    # -- CommitListener (called from the journal's writer thread) --------------------------

    def committed(self, tokens: list[object]) -> None:
        self._forward(tokens, True)

    def failed(self, tokens: list[object], error: StoreError) -> None:
        log.error("the journal failed; publishes are refused from now on: %s", error)
        self._forward(tokens, False)

    def _forward(self, tokens: list[object], ok: bool) -> None:
        waiting = []
        for token in tokens:
            if isinstance(token, threading.Event):
                token.set()
            else:
                waiting.append(token)
        if waiting:
            # RuntimeError: the loop is closed, the broker stopped; nobody waits any more.
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._journal_done, waiting, ok)

    def _journal_done(self, tokens: list[object], ok: bool) -> None:
        """On the event loop: tokens are the (waiter, sequence number) of ``message_routed``."""
        by_waiter: dict[JournalWaiter, list[int]] = defaultdict(list)
        for token in tokens:
            waiter, seq = cast(tuple[JournalWaiter, int], token)
            by_waiter[waiter].append(seq)
        for waiter, seqs in by_waiter.items():
            waiter.journal_done(seqs, ok)

    # -- Persistence: messages ------------------------------------------------------------

    def message_routed(self, message: Message, queues: list[Queue], token: object) -> bool:
        journal = self.journal
        if journal is None:
            return False
        if message.persistent:
            queue_ids = [q.queue_id for q in queues if q.queue_id]
        else:  # quorum queues keep transient messages too
            queue_ids = [q.queue_id for q in queues if q.persists_all_messages and q.queue_id]
        if not queue_ids:
            return False
        message.msg_id = journal.publish(
            queue_ids, encode_message(message), token, blind_keys=message.blind_keys
        )
        return True

    def content_routed(self, queue: Queue, class_id: int, data: bytes) -> int:
        if self.journal is None or not queue.queue_id:
            return 0
        return self.journal.publish([queue.queue_id], data, None, class_id)

    def message_removed(self, queue: Queue, message: Message) -> None:
        # Only what was journaled for this queue: a transient basic message journaled for a
        # quorum queue is not for a classic one; a 0-9 lane journals its own copy of each
        # message (persistent or not: every file message is kept).
        if (
            message.msg_id
            and queue.queue_id
            and (
                message.persistent
                or queue.persists_all_messages
                or message.class_id != records.BASIC_CLASS
            )
        ):
            self._acks[queue.queue_id].append(message.msg_id)
            if not self._acks_scheduled:
                self._acks_scheduled = True
                self.loop.call_soon(self._flush_acks)
            if queue.counts_deliveries and self.store.delivery_log is not None:
                self.store.delivery_log.forget(queue.queue_id, message.msg_id)

    def messages_delivered(self, queue: Queue, msg_ids: list[int]) -> None:
        log = self.store.delivery_log
        if log is None:
            return
        if queue.counts_deliveries:
            log.delivered(queue.queue_id, msg_ids)
        else:  # delivered in id order: one mark covers them all (and any before them)
            log.mark(queue.queue_id, max(msg_ids))

    def _flush_acks(self) -> None:
        self._acks_scheduled = False
        acks, self._acks = self._acks, defaultdict(list)
        if self.journal is not None:
            for queue_id, msg_ids in acks.items():
                self.journal.ack(queue_id, msg_ids)

    def sync(self) -> None:
        """Block until everything journaled so far is fsync'd (tx.commit-ok waits for it)."""
        self._flush_acks()
        if self.journal is None:
            return
        done = threading.Event()
        self.journal.barrier(done)
        if not done.wait(SYNC_TIMEOUT):
            raise StoreError(self.store.data_dir, "the journal did not sync", "Check the disk")
        self.journal.check()

    def spill_fifo(self) -> SpilledEntries:
        return SpilledEntries(self.store.spill_fifo())

    def stream_directory(self, vhost: str, queue: str) -> Path:
        """Where a stream queue keeps its log."""
        quote = urllib.parse.quote
        return self.store.data_dir / "streams" / quote(vhost, safe="") / quote(queue, safe="")

    # -- Persistence: definitions ---------------------------------------------------------

    def _save(self) -> None:
        self.store.save_topology()

    def exchange_declared(self, vhost: str, exchange: Exchange) -> None:
        definition = ExchangeDef(
            vhost,
            exchange.name,
            exchange.type_name,
            exchange.auto_delete,
            exchange.internal,
            dict(exchange.arguments),
        )
        if self.topology.exchanges.get((vhost, exchange.name)) != definition:
            self.topology.exchanges[(vhost, exchange.name)] = definition
            self._save()

    def exchange_deleted(self, vhost: str, name: str) -> None:
        t = self.topology
        t.exchanges.pop((vhost, name), None)
        t.bindings = [
            b
            for b in t.bindings
            if b.vhost != vhost
            or (b.source != name and (b.destination_kind, b.destination) != ("exchange", name))
        ]
        self._save()

    def queue_declared(self, vhost: str, queue: Queue) -> None:
        if queue.exclusive:
            return
        t = self.topology
        definition = t.queues.get((vhost, queue.name))
        if definition is None:
            definition = QueueDef(
                vhost, queue.name, t.allocate_queue_id(), queue.auto_delete, dict(queue.arguments)
            )
            t.queues[(vhost, queue.name)] = definition
            self._save()
        if queue.type_name != "stream":  # streams keep their own log
            queue.queue_id = definition.queue_id

    def queue_deleted(self, vhost: str, name: str) -> None:
        t = self.topology
        removed = t.queues.pop((vhost, name), None)
        kept = [
            b
            for b in t.bindings
            if (b.vhost, b.destination_kind, b.destination) != (vhost, "queue", name)
        ]
        if removed is not None or len(kept) != len(t.bindings):
            t.bindings = kept
            self._save()

    def binding_changed(
        self,
        vhost: str,
        source: str,
        destination: str,
        kind: str,
        key: str,
        arguments: dict[str, Any],
        added: bool,
    ) -> None:
        binding = BindingDef(vhost, source, destination, kind, key, dict(arguments or {}))
        bindings = self.topology.bindings
        if added and binding not in bindings:
            bindings.append(binding)
        elif not added and binding in bindings:
            bindings.remove(binding)
        else:
            return
        self._save()


#: restore(virtual host, queue, journal message id, the message's bytes): puts a journaled
#: message of a content class other than basic back (in the queue's lane of its class).
ContentRestorer = Callable[["VirtualHost", "Queue", int, bytes], None]
#: How recovery puts back a journaled message of a content class other than basic (the 0-9
#: file and message classes, which queues hold in lanes), by AMQP class id. The server
#: module of those classes registers.
CONTENT_RESTORERS: dict[int, ContentRestorer] = {}


def _restorer(data_dir: Path, class_id: int) -> ContentRestorer:
    restore = CONTENT_RESTORERS.get(class_id)
    if restore is None:
        raise StoreError(
            data_dir,
            f"the journal holds messages of content class {class_id}, which this broker "
            "cannot restore",
            "Run the amqp-spark broker that wrote it, or point --data-dir elsewhere",
        )
    return restore
