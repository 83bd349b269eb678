"""The access class: realms, tickets, and the 403 a wrong ticket earns on every method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from broker import Broker

from .dialects import in_both_dialects
from .flows import declare_queue
from .peer import Peer

rule = pytest.mark.spec_rule


def _ticket(peer: Peer, channel: int = 1, **rights: Any) -> int:
    return int(peer.call(channel, "access.request", realm="/data", **rights).ticket)


@in_both_dialects("access.request.realm:validity", draft=("access.request.realm:validity",))
def test_an_unknown_realm_is_refused_like_a_forbidden_one(peer: Peer) -> None:
    peer.send(1, "access.request", realm="/no-such-realm", active=True)
    assert peer.channel_error(1) == 403


@rule("access.request-ok:per-channel")
def test_a_ticket_is_valid_only_on_the_channel_that_got_it(peer: Peer, name: str) -> None:
    ticket = _ticket(peer, active=True, read=True, write=True)
    peer.open_channel(2)
    peer.send(2, "queue.declare", ticket=ticket + 1000, queue=name)
    assert peer.channel_error(2) == 403
    assert peer.call(1, "queue.declare", ticket=ticket, queue=name).queue == name


@rule("exchange.declare.ticket:validity")
def test_exchange_declare_needs_active_or_for_passive_passive(peer: Peer, name: str) -> None:
    passive = _ticket(peer, passive=True)
    peer.call(
        1, "exchange.declare", ticket=passive, exchange="amq.direct", type="direct", passive=True
    )
    peer.send(1, "exchange.declare", ticket=passive, exchange=name, type="direct")
    assert peer.channel_error(1) == 403


@rule("exchange.delete.ticket:validity")
def test_exchange_delete_needs_an_active_ticket(peer: Peer, name: str) -> None:
    peer.call(1, "exchange.declare", exchange=name, type="direct")
    read_only = _ticket(peer, read=True)
    peer.send(1, "exchange.delete", ticket=read_only, exchange=name)
    assert peer.channel_error(1) == 403


@rule("queue.declare.ticket:validity")
def test_queue_declare_needs_an_active_ticket(peer: Peer, name: str) -> None:
    write_only = _ticket(peer, write=True)
    peer.send(1, "queue.declare", ticket=write_only, queue=name)
    assert peer.channel_error(1) == 403


@rule("queue.purge.ticket:01")
def test_queue_purge_needs_a_read_ticket(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    active = _ticket(peer, active=True)
    peer.send(1, "queue.purge", ticket=active, queue=name)
    assert peer.channel_error(1) == 403


@rule("basic.publish.ticket:01", "basic.get.ticket:01")
def test_basic_publish_needs_write_and_get_needs_read(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    write = _ticket(peer, write=True)
    peer.send_content(1, "basic.publish", b"x", ticket=write, exchange="", routing_key=name)
    assert (
        peer.call(1, "basic.get", ticket=write + 0, queue=name, reply="channel.close") is not None
    )


@in_both_dialects(
    "basic.consume.ticket:01",
    "file.consume.ticket:01",
    "stream.consume.ticket:01",
    "message.consume.ticket:01",
    "message.get.ticket:01",
    draft=("file.consume.ticket:validity", "stream.consume.ticket:validity"),
)
@pytest.mark.parametrize(
    "method", ["basic.consume", "file.consume", "stream.consume", "message.consume", "message.get"]
)
def test_consuming_needs_a_read_ticket(peer: Peer, name: str, method: str) -> None:
    declare_queue(peer, 1, name)
    write = _ticket(peer, write=True)
    peer.send(1, method, ticket=write, queue=name)
    assert peer.channel_error(1) == 403


@in_both_dialects(
    "file.publish.ticket:01",
    "stream.publish.ticket:01",
    "message.transfer.ticket:01",
    draft=("file.publish.ticket:validity", "stream.publish.ticket:validity"),
)
@pytest.mark.parametrize("method", ["file.publish", "stream.publish", "message.transfer"])
def test_publishing_needs_a_write_ticket(peer: Peer, name: str, method: str) -> None:
    read = _ticket(peer, read=True)
    if method == "stream.publish":
        peer.send_content(1, method, b"x", ticket=read, exchange="", routing_key=name)
    else:
        peer.send(1, method, ticket=read, routing_key=name)
    assert peer.channel_error(1) == 403


@in_both_dialects("access.request.exclusive:validity", draft=("access.request.exclusive:in-use",))
def test_exclusive_access_is_refused_while_another_channel_holds_a_ticket(
    peer_factory: Callable[..., Peer],
) -> None:
    holder, asker = peer_factory(), peer_factory()
    holder.open_channel(1)
    asker.open_channel(1)
    holder.call(1, "access.request", realm="/admin", read=True)
    asker.send(1, "access.request", realm="/admin", exclusive=True, read=True)
    assert asker.channel_error(1) == 403


@in_both_dialects()
def test_ticket_zero_is_the_implicit_data_ticket_of_clients_without_access_requests(
    peer: Peer, name: str
) -> None:
    assert peer.call(1, "queue.declare", ticket=0, queue=name).queue == name


@pytest.mark.parametrize(
    ("method", "fields"),
    [
        ("file.consume", {"queue": "app-q"}),
        ("stream.consume", {"queue": "app-q"}),
        ("message.consume", {"queue": "app-q", "destination": "d"}),
        ("message.get", {"queue": "app-q", "destination": "d"}),
        ("message.transfer", {"destination": "amq.fanout", "routing_key": "k"}),
        ("file.publish", {"exchange": "amq.fanout", "identifier": "none"}),
    ],
)
def test_the_0_9_classes_obey_the_users_read_and_write_permissions(
    broker_with: Callable[..., Broker], method: str, fields: dict[str, str]
) -> None:
    """Beyond tickets, every consume, get and publish of the file, stream and message
    classes needs the user's read (queue) or write (exchange) permission, as basic's do."""
    permissions = {"configure": "^app-", "write": "^app-|^amq\\.default$", "read": "^nothing$"}
    broker = broker_with(users={"guest": {"password": "guest", "permissions": {"/": permissions}}})
    peer = Peer(broker.url)
    try:
        peer.open_channel(1)
        declare_queue(peer, 1, "app-q")
        peer.send(1, method, **fields)
        assert peer.channel_error(1) == 403
    finally:
        peer.close()


def test_stream_publish_needs_write_permission_on_its_exchange(
    broker_with: Callable[..., Broker],
) -> None:
    broker = broker_with(
        users={"guest": {"password": "guest", "permissions": {"/": {"write": "^app-"}}}}
    )
    peer = Peer(broker.url)
    try:
        peer.open_channel(1)
        peer.send_content(1, "stream.publish", b"x", exchange="amq.fanout", routing_key="k")
        assert peer.channel_error(1) == 403
    finally:
        peer.close()
