"""exchange.query, binding.query and the execution class of the draft on the server.

exchange.query answers query-ok with the exchange's type, durability and arguments, or
``not-found`` (an empty name is the default exchange). binding.query narrows the bindings of
the exchange by the fields the client populated, in the order the draft lists them: the
queue (``queue-not-matched`` when none of the bindings is to it), then the routing key
(``key-not-matched``), then the arguments (``args-not-matched``); an unknown exchange or queue
sets ``exchange-not-found`` / ``queue-not-found``. The default exchange is bound to every
queue by the queue's name.

Execution: the draft leaves how command-ids are computed to a later chapter; here the
command-id of a method is its number among the methods of the other classes (not session,
not execution) the client sent on the channel, counting from 1. The server executes them in
order as they arrive, so execution.flush is answered by execution.complete whose
cumulative-execution-mark is the last of them and whose ranged set is empty (rule
execution.complete:unique-encoding holds: nothing above the mark is covered).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from amqp_protocol.generated.spec_0_10 import BindingQuery, ExchangeQuery

from ...model.exchanges import Exchange
from ..abc import Channel
from ..dialect import ChannelHandler
from .state import state_of


def exchange_query(ch: Channel, m: ExchangeQuery) -> None:
    ok = ch.conn.spec.method("exchange.query-ok")
    ex = ch.vhost.exchanges.get(m.name)
    if ex is None:
        ch.send(ok(not_found=True))
        return
    ch.send(ok(type=ex.type_name, durable=ex.durable, arguments=dict(ex.arguments)))


def _bindings(ch: Channel, ex: Exchange) -> Iterator[tuple[object, str, dict[str, Any]]]:
    if ex.name == "":
        for queue in ch.vhost.queues.values():
            yield queue, queue.name, {}
        return
    for (destination, key, _), arguments in ex.bindings.items():
        yield destination, key, arguments


def binding_query(ch: Channel, m: BindingQuery) -> None:
    ok = ch.conn.spec.method("binding.query-ok")
    ex = ch.vhost.exchanges.get(m.exchange)
    queue = ch.vhost.queues.get(m.queue) if m.queue else None
    if ex is None or (m.queue and queue is None):
        ch.send(ok(exchange_not_found=ex is None, queue_not_found=bool(m.queue) and queue is None))
        return
    found = list(_bindings(ch, ex))
    flags: dict[str, bool] = {}
    if m.queue:
        found = [b for b in found if b[0] is queue]
        flags["queue_not_matched"] = not found
    if m.routing_key:
        found = [b for b in found if b[1] == m.routing_key]
        flags["key_not_matched"] = not found
    if m.arguments:
        found = [b for b in found if b[2] == m.arguments]
        flags["args_not_matched"] = not found
    ch.send(ok(**flags))


def execution_flush(ch: Channel, m: object) -> None:
    complete = ch.conn.spec.method("execution.complete")
    ch.send(complete(cumulative_execution_mark=state_of(ch).commands, ranged_execution_set=[]))


def _ignore(ch: Channel, m: object) -> None:
    pass


HANDLERS: dict[str, ChannelHandler] = {
    "exchange.query": exchange_query,
    "binding.query": binding_query,
    "execution.flush": execution_flush,
    "execution.complete": _ignore,  # the client's: nothing of ours waits for it
}
