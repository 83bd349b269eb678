"""The tunnel class: tunnel.request carries a block of data (its content) between peers.

A channel that sends tunnel.request becomes an endpoint of the tunnel named by the
``proxy-name`` property (per virtual host). Its data goes to the other endpoints of that
tunnel: all of them with ``broadcast`` set, else the longest-registered one. A request
without data only registers its channel. ``durable``
data that finds no other endpoint is kept for the next one to register.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from amqp_protocol import errors
from amqp_protocol.generated.any_version import TunnelProperties, TunnelRequest

if TYPE_CHECKING:
    from ...model.vhost import VirtualHost
    from ..abc import Channel

_Data = tuple[Any, Any, bytes]  #: (tunnel.request, properties, body)
_endpoints: weakref.WeakKeyDictionary[VirtualHost, dict[str, list[Channel]]] = (
    weakref.WeakKeyDictionary()
)
_kept: weakref.WeakKeyDictionary[VirtualHost, dict[str, list[_Data]]] = weakref.WeakKeyDictionary()


def tunnel_request(
    ch: Channel, m: TunnelRequest, properties: TunnelProperties, body: bytes
) -> None:
    proxy = properties.proxy_name
    if not proxy:
        raise errors.PreconditionFailed("PRECONDITION_FAILED - tunnel.request without proxy-name")
    endpoints = _endpoints.setdefault(ch.vhost, {}).setdefault(proxy, [])
    endpoints[:] = [e for e in endpoints if not e.closed]
    kept = _kept.setdefault(ch.vhost, {}).setdefault(proxy, [])
    if ch not in endpoints:
        endpoints.append(ch)
        for data in kept:
            _forward(ch, data)
        kept.clear()
    if not body:
        return  # registration only
    peers = [e for e in endpoints if e is not ch]
    if not peers:
        if properties.durable:
            kept.append((m, properties, body))
        return
    for peer in peers if properties.broadcast else peers[:1]:
        _forward(peer, (m, properties, body))


def _forward(ch: Channel, data: _Data) -> None:
    method, properties, body = data
    ch.conn.send_content(ch.id, method, properties, body)
