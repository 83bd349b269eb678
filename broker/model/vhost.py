"""A virtual host: its exchanges and queues, declaration rules and routing.

Errors are raised as the AMQP errors RabbitMQ sends, with its reply texts, so that the
channel handlers only have to name the culprit method.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from typing import Any

from amqp_protocol import errors

from .clock import Clock
from .dead_letters import QUEUE_DELETED, dead_lettered, is_death_cycle
from .exchanges import BLIND_COPY_HEADER, EXCHANGE_TYPES, Destination, Exchange
from .field_types import amqp_type_name
from .memory import MemoryGauge
from .message import Message
from .persistence import InMemory, Persistence
from .policies import Policies, Policy
from .queue_types import QueueTypes
from .queues import Queue, QueueContext, refuse_delivery_limit

#: The exchanges every virtual host has (besides the default exchange "").
STANDARD_EXCHANGES = {
    "amq.direct": "direct",
    "amq.fanout": "fanout",
    "amq.topic": "topic",
    "amq.headers": "headers",
    "amq.match": "headers",
}
#: Queue arguments compared when a queue of any type is redeclared (``Queue`` adds its own).
_EQUIVALENT_QUEUE_ARGS = (
    "x-message-ttl",
    "x-expires",
    "x-max-length",
    "x-max-length-bytes",
    "x-overflow",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-priority",
    "x-single-active-consumer",
    "x-queue-type",
    "x-queue-leader-locator",
    "x-max-age",
    "x-stream-max-segment-size-bytes",
)


def _flag(value: bool) -> str:
    return "true" if value else "false"


class VirtualHost:
    def __init__(
        self,
        name: str,
        clock: Clock,
        memory: MemoryGauge,
        store: Persistence | None = None,
        queue_types: QueueTypes | None = None,
    ) -> None:
        """``queue_types``: those ``x-queue-type`` may name (the model's own, classic and
        quorum, without)."""
        self.name = name
        self.store: Persistence = store or InMemory()
        self.queue_types = queue_types or QueueTypes()
        #: What the queues of this virtual host use of it.
        self.queue_context = QueueContext(
            name, clock, memory, self.store, self.dead_letter, self.delete_unused_queue
        )
        self.exchanges: dict[str, Exchange] = {"": EXCHANGE_TYPES["direct"]("", durable=True)}
        for ename, etype in STANDARD_EXCHANGES.items():
            self.exchanges[ename] = EXCHANGE_TYPES[etype](ename, durable=True)
        self.queues: dict[str, Queue] = {}
        #: The lanes of the queues: for a queue, its private queue of each content class other
        #: than basic that it was sent or consumed (the 0-9 classes; broker.server.spec09.lanes).
        #: They live and die with the queue, and their consumers count as its consumers.
        self.lanes: dict[Queue, dict[str, Queue]] = {}
        #: For each destination, the exchanges that have bindings to it.
        self._sources: dict[Destination, set[Exchange]] = {}
        #: Its policies and operator policies, applied at declaration and when they change.
        self.policies = Policies()
        #: Its limits (``max-queues``, ``max-connections``; negative: none), as set.
        self.limits: dict[str, int] = {}

    def _where(self) -> str:
        return f"in vhost '{self.name}'"

    # -- exchanges ----------------------------------------------------------------------------

    def exchange(self, name: str) -> Exchange:
        ex = self.exchanges.get(name)
        if ex is None:
            raise errors.NotFound(f"NOT_FOUND - no exchange '{name}' {self._where()}")
        return ex

    def declare_exchange(
        self,
        name: str,
        type_name: str,
        *,
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> Exchange:
        if passive:
            return self.exchange(name)
        if name == "":
            raise errors.AccessRefused(
                "ACCESS_REFUSED - operation not permitted on the default exchange"
            )
        cls = EXCHANGE_TYPES.get(type_name)
        if cls is None:
            raise errors.CommandInvalid(f"COMMAND_INVALID - invalid exchange type '{type_name}'")
        ex = self.exchanges.get(name)
        if ex is None:
            if name.startswith("amq."):
                raise errors.AccessRefused(
                    f"ACCESS_REFUSED - exchange name '{name}' contains reserved prefix 'amq.*'"
                )
            ex = cls(
                name,
                durable=durable,
                auto_delete=auto_delete,
                internal=internal,
                arguments=arguments,
            )
            self.exchanges[name] = ex
            if self.policies:
                self.policies.apply_to_exchange(ex)
            if durable:
                self.store.exchange_declared(self.name, ex)
            return ex
        what = f"for exchange '{name}' {self._where()}"
        for arg, received, current in (
            ("type", type_name, ex.type_name),
            ("durable", _flag(durable), _flag(ex.durable)),
            ("auto_delete", _flag(auto_delete), _flag(ex.auto_delete)),
            ("internal", _flag(internal), _flag(ex.internal)),
        ):
            if received != current:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - inequivalent arg '{arg}' {what}: "
                    f"received '{received}' but current is '{current}'"
                )
        new_ae = (arguments or {}).get("alternate-exchange")
        if new_ae != ex.arguments.get("alternate-exchange"):
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' {what}"
            )
        return ex

    @staticmethod
    def refuse_deleting_reserved(name: str) -> None:
        """403 for the default exchange and the ``amq.*`` ones, which no one may delete."""
        if name == "" or name.startswith("amq."):
            raise errors.AccessRefused(
                "ACCESS_REFUSED - operation not permitted on the default exchange"
                if name == ""
                else f"ACCESS_REFUSED - exchange name '{name}' contains reserved prefix 'amq.*'"
            )

    def delete_exchange(self, name: str, *, if_unused: bool = False) -> None:
        self.refuse_deleting_reserved(name)
        ex = self.exchanges.get(name)
        if ex is None:
            return
        if if_unused and ex.bindings:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - exchange '{name}' {self._where()} in use"
            )
        self._remove_exchange(ex)

    def _remove_exchange(self, ex: Exchange) -> None:
        del self.exchanges[ex.name]
        for dest in ex.destinations():
            self._sources.get(dest, set()).discard(ex)
        ex.bindings.clear()
        for source in self._sources.pop(ex, set()):
            source.unbind_all(ex)
            self._after_unbind(source)
        if ex.durable:
            self.store.exchange_deleted(self.name, ex.name)

    def _after_unbind(self, source: Exchange) -> None:
        if source.auto_delete and not source.bindings and source.name in self.exchanges:
            self._remove_exchange(source)

    # -- bindings -----------------------------------------------------------------------------

    def _check_bindable(self, source: Exchange) -> None:
        if source.name == "":
            raise errors.AccessRefused(
                "ACCESS_REFUSED - operation not permitted on the default exchange"
            )

    def bind(
        self, destination: Queue | Exchange, source_name: str, key: str, args: dict[str, Any]
    ) -> None:
        source = self.exchange(source_name)
        self._check_bindable(source)
        if isinstance(destination, Exchange) and destination.name == "":
            self._check_bindable(destination)
        if source.bind(destination, key, args):
            self._sources.setdefault(destination, set()).add(source)
            self._binding_stored(source, destination, key, args, added=True)

    def unbind(
        self, destination: Queue | Exchange, source_name: str, key: str, args: dict[str, Any]
    ) -> None:
        source = self.exchange(source_name)
        self._check_bindable(source)
        if source.unbind(destination, key, args):
            if destination not in source.destinations():
                self._sources.get(destination, set()).discard(source)
            self._binding_stored(source, destination, key, args, added=False)
            self._after_unbind(source)

    def _binding_stored(
        self, source: Exchange, dest: Queue | Exchange, key: str, args: dict[str, Any], added: bool
    ) -> None:
        if source.durable and dest.durable:
            kind = "queue" if isinstance(dest, Queue) else "exchange"
            self.store.binding_changed(self.name, source.name, dest.name, kind, key, args, added)

    # -- queues -------------------------------------------------------------------------------

    def queue(self, name: str, owner: object | None = None) -> Queue:
        """The queue named ``name``, checking that ``owner`` may use it if it is exclusive."""
        q = self.queues.get(name)
        if q is None:
            raise errors.NotFound(f"NOT_FOUND - no queue '{name}' {self._where()}")
        if q.owner is not None and q.owner is not owner:
            raise self._locked(name)
        return q

    def _locked(self, queue: str) -> errors.AMQPError:
        return errors.ResourceLocked(
            f"RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{queue}' "
            f"{self._where()}. It could be originally declared on another connection or the "
            "exclusive property value does not match that of the original declaration."
        )

    def declare_queue(
        self,
        name: str,
        *,
        owner: object,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
        classic_refuses_delivery_limit: bool = False,
    ) -> Queue:
        """``owner`` is the declaring connection (it owns the queue if ``exclusive``); with
        ``classic_refuses_delivery_limit`` (RabbitMQ's 0-9-1, see ``refuse_delivery_limit``),
        a new classic queue refuses ``x-delivery-limit``."""
        arguments = arguments or {}
        if passive:
            q = self.queue(name, owner)
            q.touch()
            return q
        server_named = not name
        if server_named:
            name = "amq.gen-" + base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        existing = self.queues.get(name)
        if existing is not None:
            # RabbitMQ's strict check: the owner and the exclusive flag must both match.
            if existing.owner is not (owner if exclusive else None):
                raise self._locked(name)
            self._check_equivalent(existing, durable, auto_delete, arguments)
            existing.touch()
            return existing
        if name.startswith("amq.") and not server_named:
            raise errors.AccessRefused(
                f"ACCESS_REFUSED - queue name '{name}' contains reserved prefix 'amq.*'"
            )
        factory = self.queue_types.factory(arguments)
        if factory is None:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - unsupported queue type '{arguments.get('x-queue-type')}'"
            )
        if factory is Queue and classic_refuses_delivery_limit:
            refuse_delivery_limit(name, self.name, arguments)
        self._check_queue_limit(name)
        if "x-queue-type" not in arguments:
            # RabbitMQ 4.0 stamps the type into the arguments of every queue declared
            # without one (AMQP, HTTP PUT, definitions): its API and exports show it.
            arguments = {**arguments, "x-queue-type": "classic"}
        q = factory(
            self.queue_context,
            name,
            durable=durable,
            owner=owner if exclusive else None,
            auto_delete=auto_delete,
            arguments=arguments,
        )
        self.queues[name] = q
        if self.policies:
            self.policies.apply_to_queue(q)
        self.exchanges[""].bind(q, name, {})
        if durable:
            self.store.queue_declared(self.name, q)
        return q

    def _check_queue_limit(self, name: str) -> None:
        """406 for a new queue past ``max-queues`` (RabbitMQ's text)."""
        limit = self.limits.get("max-queues", -1)
        if 0 <= limit <= len(self.queues):
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - cannot declare queue '{name}': queue limit in vhost "
                f"'{self.name}' ({limit}) is reached"
            )

    def check_connection_limit(self, user: str, connections: Iterable[Any]) -> None:
        """530 for a connection.open past ``max-connections`` (``connections``: the
        broker's, those open on this vhost count), with RabbitMQ's text."""
        limit = self.limits.get("max-connections", -1)
        if limit < 0:
            return
        if limit <= sum(1 for c in connections if c.vhost is self and c.opened):
            raise errors.NotAllowed(
                f"NOT_ALLOWED - access to vhost '{self.name}' refused for user '{user}': "
                f"connection limit ({limit}) is reached"
            )

    def set_policy(self, policy: Policy, operator: bool = False) -> bool:
        """Set (or replace) a policy or operator policy: the queues and exchanges it may
        change take the policies that apply to them now, as RabbitMQ re-applies them.
        True if one of that name was there."""
        old = self.policies.set(policy, operator)
        self.policies.reapply(old, policy, operator, self.queues.values(), self.exchanges.values())
        return old is not None

    def clear_policy(self, name: str, operator: bool = False) -> bool:
        """Clear one, re-applying as ``set_policy`` does; False if there was none."""
        old = self.policies.clear(name, operator)
        if old is None:
            return False
        self.policies.reapply(old, None, operator, self.queues.values(), self.exchanges.values())
        return True

    def _check_equivalent(
        self, q: Queue, durable: bool, auto_delete: bool, arguments: dict[str, Any]
    ) -> None:
        what = f"for queue '{q.name}' {self._where()}"
        for arg, received, current in (
            ("durable", durable, q.durable),
            ("auto_delete", auto_delete, q.auto_delete),
        ):
            if received != current:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - inequivalent arg '{arg}' {what}: "
                    f"received '{_flag(received)}' but current is '{_flag(current)}'"
                )
        for arg in (*_EQUIVALENT_QUEUE_ARGS, *q.equivalent_type_args):
            # RabbitMQ 4.0 compares queue types with classic for one not given (3.10: none).
            default = "classic" if arg == "x-queue-type" else None
            received_value, current_value = (
                arguments.get(arg, default),
                q.arguments.get(arg, default),
            )
            if received_value != current_value:
                both = received_value is not None and current_value is not None
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - inequivalent arg '{arg}' {what}: "
                    f"received {_describe(received_value, both)} "
                    f"but current is {_describe(current_value, both)}"
                )

    def lanes_of(self, q: Queue) -> list[Queue]:
        return list(self.lanes.get(q, {}).values())

    def in_use(self, q: Queue) -> bool:
        """``q`` or one of its lanes has a consumer."""
        return bool(q.consumers) or any(lane.consumers for lane in self.lanes_of(q))

    def delete_unused_queue(self, q: Queue) -> None:
        """Auto-delete or ``x-expires`` found ``q`` without consumers of its own: it goes
        unless a lane of it still has consumers (the lane deletes it when they go)."""
        if not self.in_use(q):
            self.delete_queue(q)

    def delete_queue(self, q: Queue, *, dead_letter_pending: bool = False) -> int:
        """Remove a queue: its bindings go, its consumers (those of its lanes too) are told.
        Returns its message count.

        Its ready messages are dropped, as RabbitMQ drops them; with ``dead_letter_pending``
        (a 0-9 or 0-8 queue.delete, rule queue.delete:01) those of the queue and of its
        lanes go first, in order, to its dead-letter exchange with the ``x-death`` reason
        ``QUEUE_DELETED`` (each through its queue's ``dead_letter``: the lanes decide per
        content class). The queue is unbound by then, so none of them can come back to it.
        Deliveries still unacknowledged stay with their channels; one that comes back later
        finds the queue gone and is dropped."""
        if self.queues.get(q.name) is not q:
            return 0
        count = q.message_count
        del self.queues[q.name]
        for source in self._sources.pop(q, set()):
            source.unbind_all(q)
            self._after_unbind(source)
        self.exchanges[""].unbind(q, q.name, {})
        queues = (q, *self.lanes.pop(q, {}).values())
        if dead_letter_pending:
            for queue in queues:
                _dead_letter_ready(queue)
        for queue in queues:
            for consumer in queue.destroy():
                consumer.sink.consumer_cancelled(consumer)
        if q.durable:
            self.store.queue_deleted(self.name, q.name)
        return count

    def delete_queue_named(
        self, name: str, owner: object, *, if_unused: bool = False, if_empty: bool = False
    ) -> int:
        if name not in self.queues:
            return 0
        q = self.queue(name, owner)
        q.check_delete(if_unused=if_unused, if_empty=if_empty)
        if if_unused and self.in_use(q):
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - queue '{name}' {self._where()} in use"
            )
        if if_empty and q.message_count:
            raise errors.PreconditionFailed(
                f"PRECONDITION_FAILED - queue '{name}' {self._where()} not empty"
            )
        return self.delete_queue(q)

    def delete_owned_by(self, owner: object) -> None:
        """The owning connection closed: its exclusive queues go with it."""
        for q in [q for q in self.queues.values() if q.owner is owner]:
            self.delete_queue(q)

    # -- routing ------------------------------------------------------------------------------

    def route(
        self,
        exchange: Exchange,
        routing_key: str,
        headers: dict[str, Any],
        alternates_chain: bool = True,
    ) -> list[Queue]:
        """The queues a message reaches through ``exchange``: exchange-to-exchange bindings
        are followed (each exchange once), and an exchange that routes nowhere hands the
        message to its alternate exchange. With ``alternates_chain`` (RabbitMQ) an alternate
        exchange that routes nowhere hands it on to its own; without, it is dropped there."""
        first = exchange.route(routing_key, headers)
        if exchange.alternate_exchange is None and all(type(d) is Queue for d in first):
            return list(first)  # type: ignore[arg-type]
        queues: dict[Queue, None] = {}
        seen: set[Exchange] = set()
        #: (exchange, reached through an alternate exchange)
        stack: list[tuple[Exchange, bool]] = [(exchange, False)]
        while stack:
            ex, alternate = stack.pop()
            if ex in seen:
                continue
            seen.add(ex)
            matched = ex.route(routing_key, headers)
            for dest in matched:
                if isinstance(dest, Exchange):
                    stack.append((dest, alternate))
                else:
                    queues[dest] = None  # type: ignore[index]
            if matched or ex.alternate_exchange is None or (alternate and not alternates_chain):
                continue
            ae = self.exchanges.get(ex.alternate_exchange)
            if ae is not None:
                stack.append((ae, True))
        return list(queues)

    def dead_letter(self, queue: Queue, message: Message, reason: str) -> None:
        """Republish a message its queue let go (rejected, expired, maxlen) to the queue's
        dead-letter exchange, with the ``x-death`` history RabbitMQ records."""
        settings = queue.settings
        if settings.dead_letter_exchange is None:
            return
        dlx = self.exchanges.get(settings.dead_letter_exchange)
        if dlx is None:
            return
        key = settings.dead_letter_routing_key
        dead = dead_lettered(message, queue.name, reason, dlx.name, key)
        targets = self.route_dead_lettered(dlx, dead, key_alone=key is not None)
        self.store.message_routed(dead, targets, None)
        for target in targets:
            target.publish(dead)

    def route_dead_lettered(self, dlx: Exchange, dead: Message, *, key_alone: bool) -> list[Queue]:
        """The queues a message ``dead_lettered`` on its way to ``dlx`` goes to: routed by
        its routing key and ``CC`` and ``BCC`` keys (``blind_keys``, RabbitMQ's routing keys
        of the message), or by its routing key alone when it is the queue's dead-letter
        routing key (``key_alone``: it replaced them all; the ``CC`` header it keeps does
        not route), less the queues that would make an automatic cycle
        (``is_death_cycle``)."""
        headers = {} if key_alone else dead.headers
        if dead.blind_keys:
            headers = {**headers, BLIND_COPY_HEADER: list(dead.blind_keys)}
        deaths = dead.headers["x-death"]
        routed = self.route(dlx, dead.routing_key, headers)
        return [q for q in routed if not is_death_cycle(deaths, q.name)]


def _dead_letter_ready(queue: Queue) -> None:
    """Let every ready message of ``queue`` go, reason ``QUEUE_DELETED`` (messages whose TTL
    ran out on the way go as ``expired``, as ``Queue.get`` lets them). Without a dead-letter
    exchange there is nowhere to go: ``destroy`` drops them (stream queues, which refuse
    one, never get here)."""
    if queue.settings.dead_letter_exchange is None:
        return
    while (entry := queue.get()) is not None:
        queue.settle(entry)
        queue.dead_letter(entry.message, QUEUE_DELETED)


def _describe(value: Any, both: bool) -> str:
    """An argument's value as RabbitMQ's inequivalence texts show it: bare when both the
    received and the current value are there ("received '6' but current is '5'"), with its
    type when one side has none."""
    if value is None:
        return "none"
    text = _flag(value) if isinstance(value, bool) else value
    if both:
        return f"'{text}'"
    return f"the value '{text}' of type '{amqp_type_name(value)}'"
