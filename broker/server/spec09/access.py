"""The access class: realms, access.request, and the ticket every 0-9 method carries.

Realms are per virtual host. ``/data`` holds every exchange and queue of the virtual host
and is open to each user allowed on it; ``/admin`` is open to users tagged
``administrator``. A ticket grants the rights asked for (passive, active, write, read) on
one realm, on the channel that requested it only; on ``/data`` active, write and read need
the user's configure, write and read permissions to be non-empty. Asking again for a realm
replaces the channel's ticket onto it. Ticket 0 is the channel's implicit
ticket: full rights on ``/data`` (what clients that never send access.request, such as
every 0-9-1 client, rely on), unless another channel holds ``/data`` exclusively.

Tickets come on top of the user's configure/write/read permissions (``broker.access``),
which every method is checked against: the 0-9-1 methods by ``Access.check``, the file,
stream and message classes' consumes, gets and publishes here (``check_permissions``), as
their basic counterparts are.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from amqp_protocol import Method, errors
from amqp_protocol.generated.any_version import AccessRequest

from .state import Ticket, state_of

if TYPE_CHECKING:
    from ...model.vhost import VirtualHost
    from ..abc import Channel

DATA_REALM = "/data"
ADMIN_REALM = "/admin"
RIGHTS = ("passive", "active", "write", "read")

#: The right each ticketed method needs (declare/delete with passive set: "passive").
NEEDED = {
    "exchange.declare": "active",
    "exchange.delete": "active",
    "queue.declare": "active",
    "queue.bind": "active",
    "queue.unbind": "active",
    "queue.purge": "read",
    "queue.delete": "active",
    "basic.consume": "read",
    "basic.get": "read",
    "basic.publish": "write",
    "file.consume": "read",
    "file.publish": "write",
    "stream.consume": "read",
    "stream.publish": "write",
    "message.transfer": "write",
    "message.consume": "read",
    "message.get": "read",
    # the transitional 0-10 draft's other ticketed methods (spec010/classes09.py)
    "exchange.query": "passive",
    "binding.query": "passive",
    **dict.fromkeys(
        (
            "dtx-demarcation.start",
            "dtx-demarcation.end",
            "dtx-coordination.commit",
            "dtx-coordination.forget",
            "dtx-coordination.prepare",
            "dtx-coordination.recover",
            "dtx-coordination.rollback",
            "dtx-coordination.set-timeout",
        ),
        "active",
    ),
}


#: Per virtual host: realm -> the channels holding tickets on it, and which one holds it
#: exclusively.
_holders: weakref.WeakKeyDictionary[VirtualHost, dict[str, set[Channel]]] = (
    weakref.WeakKeyDictionary()
)
_exclusive: weakref.WeakKeyDictionary[VirtualHost, dict[str, Channel]] = weakref.WeakKeyDictionary()


def _realms_for(channel: Channel) -> set[str]:
    user = channel.conn.config.users.get(channel.conn.user or "")
    realms = {DATA_REALM}
    if user is not None and "administrator" in user.tags:
        realms.add(ADMIN_REALM)
    return realms


#: The user permission (configure / write / read pattern) a right on ``/data`` needs; passive
#: access only looks, which every user allowed on the virtual host may do.
_RIGHT_NEEDS = {"active": "configure", "write": "write", "read": "read"}


def _require_permissions(channel: Channel, realm: str, rights: frozenset[str]) -> None:
    """403 when the user's permissions on the virtual host grant nothing of a right asked
    for on ``/data`` (an empty pattern matches no resource)."""
    if realm != DATA_REALM:
        return
    user = channel.conn.config.users.get(channel.conn.user or "")
    permission = user.permissions.get(channel.vhost.name) if user is not None else None
    for right in sorted(rights & _RIGHT_NEEDS.keys()):
        if not getattr(permission, _RIGHT_NEEDS[right], ""):
            raise errors.AccessRefused(
                f"ACCESS_REFUSED - no {_RIGHT_NEEDS[right]} permission in vhost "
                f"'{channel.vhost.name}': realm '{realm}' grants no {right} access"
            )


def access_request(channel: Channel, m: AccessRequest) -> None:
    """Grant a ticket, or refuse: an unknown realm looks exactly like a forbidden one."""
    ext = state_of(channel)
    realm = m.realm
    if realm not in _realms_for(channel):
        raise errors.AccessRefused(f"ACCESS_REFUSED - access to realm '{realm}' refused")
    holders = _holders.setdefault(channel.vhost, {}).setdefault(realm, set())
    owner = _exclusive.setdefault(channel.vhost, {}).get(realm)
    if owner is not None and owner is not channel:
        raise errors.AccessRefused(f"ACCESS_REFUSED - realm '{realm}' is held exclusively")
    if m.exclusive and holders - {channel}:
        raise errors.AccessRefused(
            f"ACCESS_REFUSED - realm '{realm}' has active tickets on other channels"
        )
    rights = frozenset(r for r in RIGHTS if getattr(m, r))
    _require_permissions(channel, realm, rights)
    # A new ticket onto a realm destroys the channel's previous one (field realm).
    ext.tickets = {n: t for n, t in ext.tickets.items() if t.realm != realm}
    ext.tickets_issued += 1
    number = ext.tickets_issued
    ext.tickets[number] = Ticket(number, realm, rights, bool(m.exclusive))
    if not m.exclusive and _exclusive[channel.vhost].get(realm) is channel:
        del _exclusive[channel.vhost][realm]
    holders.add(channel)
    if m.exclusive:
        _exclusive[channel.vhost][realm] = channel
    channel.send(channel.conn.spec.method("access.request-ok")(ticket=number))


def release(channel: Channel) -> None:
    """The channel closed: its tickets lapse."""
    for realm, holders in _holders.get(channel.vhost, {}).items():
        holders.discard(channel)
        exclusive = _exclusive.get(channel.vhost, {})
        if exclusive.get(realm) is channel:
            del exclusive[realm]


def check(channel: Channel, m: Method) -> None:
    """What every method is checked against before its handler: its ticket and the user's
    permissions (the core's ``Access.check`` covers the 0-9-1 methods' permissions)."""
    check_ticket(channel, m)
    check_permissions(channel, m)


def check_ticket(channel: Channel, m: Method) -> None:
    """403 unless ``m.ticket`` grants what ``m`` needs on the ``/data`` realm (every method
    of ``NEEDED`` has a ticket field)."""
    needed = NEEDED.get(m.NAME)
    if needed is None:
        return
    if getattr(m, "passive", False):
        needed = "passive"
    number: int = getattr(m, "ticket", 0)
    if number == 0:
        owner = _exclusive.get(channel.vhost, {}).get(DATA_REALM)
        if owner is None or owner is channel:
            return
        raise errors.AccessRefused(
            f"ACCESS_REFUSED - realm '{DATA_REALM}' is held exclusively by another channel"
        )
    ticket = state_of(channel).tickets.get(number)
    if ticket is None:
        raise errors.AccessRefused(f"ACCESS_REFUSED - ticket {number} was not granted here")
    if ticket.realm != DATA_REALM or needed not in ticket.rights:
        raise errors.AccessRefused(
            f"ACCESS_REFUSED - ticket {number} does not grant '{needed}' access to "
            f"realm '{DATA_REALM}'"
        )


#: The user permission each 0-9 class method needs: (kind, resource, the field naming it).
PERMISSIONS = {
    "file.consume": ("read", "queue", "queue"),
    "file.publish": ("write", "exchange", "exchange"),
    "stream.consume": ("read", "queue", "queue"),
    "stream.publish": ("write", "exchange", "exchange"),
    "message.consume": ("read", "queue", "queue"),
    "message.get": ("read", "queue", "queue"),
    "message.transfer": ("write", "exchange", "destination"),
}


def check_permissions(channel: Channel, m: Method) -> None:
    """403 unless the user's permissions allow ``m`` (a 0-9 class method) on its resource;
    an empty queue name is the queue last declared on the channel."""
    needed = PERMISSIONS.get(m.NAME)
    if needed is None:
        return
    kind, resource, field_name = needed
    name: str = getattr(m, field_name)
    if resource == "queue" and not name:
        name = channel.last_queue or ""
    channel.conn.access.require(kind, resource, name)


HANDLERS = {"access.request": access_request}
