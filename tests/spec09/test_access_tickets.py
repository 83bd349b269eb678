"""Access tickets beyond the per-rule tests: every method that carries a ticket checks it,
a new request replaces the channel's ticket onto the realm, exclusive access shuts out the
implicit ticket of other channels, and realms and rights follow the broker's users."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from broker import Broker

from .flows import declare_queue
from .peer import Peer

#: Every 0-9 method with a ticket field, and fields that would make it succeed.
TICKETED: dict[str, dict[str, Any]] = {
    "exchange.declare": {"exchange": "amq.direct", "type": "direct", "passive": True},
    "exchange.delete": {"exchange": "amq.direct"},
    "queue.declare": {"queue": ""},
    "queue.bind": {"queue": "", "exchange": "amq.direct"},
    "queue.unbind": {"queue": "", "exchange": "amq.direct"},
    "queue.purge": {"queue": ""},
    "queue.delete": {"queue": ""},
    "basic.consume": {"queue": ""},
    "basic.get": {"queue": ""},
    "file.consume": {"queue": ""},
    "file.publish": {"exchange": "", "identifier": "none"},
    "stream.consume": {"queue": ""},
    "message.transfer": {"destination": ""},
    "message.consume": {"queue": ""},
    "message.get": {"queue": ""},
}
TICKETED_CONTENT = ("basic.publish", "stream.publish")
NEVER_GRANTED = 77


def _ticket(peer: Peer, channel: int = 1, realm: str = "/data", **rights: Any) -> int:
    return int(peer.call(channel, "access.request", realm=realm, **rights).ticket)


@pytest.fixture
def peer_of(broker_with: Callable[..., Broker]) -> Iterator[Callable[[dict[str, Any]], Peer]]:
    """A 0-9 peer, channel 1 open, logged in as ``app`` on a broker with that one user."""
    peers: list[Peer] = []

    def make(user: dict[str, Any]) -> Peer:
        broker = broker_with(users={"app": {"password": "pw", **user}})
        peers.append(Peer(broker.url, user="app", password="pw"))
        peers[-1].open_channel(1)
        return peers[-1]

    yield make
    for peer in peers:
        peer.close()


@pytest.mark.parametrize("method", [*TICKETED, *TICKETED_CONTENT])
def test_every_ticketed_method_refuses_a_ticket_never_granted(
    peer: Peer, method: str, name: str
) -> None:
    declare_queue(peer, 1, name)  # the queue an empty name refers to
    if method in TICKETED_CONTENT:
        peer.send_content(1, method, b"x", ticket=NEVER_GRANTED, exchange="", routing_key=name)
    else:
        peer.send(1, method, ticket=NEVER_GRANTED, **TICKETED[method])
    assert peer.channel_error(1) == 403


def test_a_new_request_onto_a_realm_destroys_the_previous_ticket(peer: Peer, name: str) -> None:
    first = _ticket(peer, active=True, read=True)
    second = _ticket(peer, read=True)
    declare_queue(peer, 1, name)
    assert peer.call(1, "basic.get", ticket=second, queue=name).NAME == "basic.get-empty"
    peer.send(1, "queue.declare", ticket=first, queue=name)
    assert peer.channel_error(1) == 403


def test_an_exclusive_ticket_shuts_out_the_implicit_ticket_of_other_channels(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    holder, other = peer_factory(), peer_factory()
    holder.open_channel(1)
    other.open_channel(1)
    exclusive = _ticket(holder, exclusive=True, active=True)
    assert holder.call(1, "queue.declare", ticket=exclusive, queue=name).queue == name
    other.send(1, "queue.declare", queue=name)
    assert other.channel_error(1) == 403
    holder.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    other.open_channel(2)
    assert other.call(2, "queue.declare", queue=name).queue == name


def test_the_only_holder_of_a_realm_may_make_its_ticket_exclusive(peer: Peer) -> None:
    _ticket(peer, read=True)
    assert _ticket(peer, exclusive=True, read=True) > 0


def test_the_admin_realm_is_open_to_administrators_only(
    peer_of: Callable[[dict[str, Any]], Peer],
) -> None:
    admin = peer_of({"tags": ["administrator"]})
    assert _ticket(admin, realm="/admin", active=True) > 0
    user = peer_of({"tags": ["management"]})
    user.send(1, "access.request", realm="/admin", active=True)
    assert user.channel_error(1) == 403


@pytest.mark.parametrize(
    ("right", "permission"), [("active", "configure"), ("write", "write"), ("read", "read")]
)
def test_a_right_the_users_permissions_deny_is_refused(
    peer_of: Callable[[dict[str, Any]], Peer], right: str, permission: str
) -> None:
    everything = {"configure": ".*", "write": ".*", "read": ".*"}
    peer = peer_of({"permissions": {"/": {**everything, permission: ""}}})
    others: dict[str, Any] = {r: True for r in ("active", "write", "read") if r != right}
    assert _ticket(peer, passive=True, **others) > 0
    peer.send(1, "access.request", realm="/data", **{right: True})
    assert peer.channel_error(1) == 403
