"""tunnel.request's properties: proxy-name names the tunnel, broadcast picks every other
endpoint instead of one, durable keeps data no endpoint is there for, data-name and the
meta-data travel with the data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .dialects import in_both_dialects
from .peer import Peer


def _endpoints(peer_factory: Callable[..., Peer], count: int) -> list[Peer]:
    peers = [peer_factory() for _ in range(count)]
    for p in peers:
        p.open_channel(1)
    return peers


def _request(peer: Peer, body: bytes, **properties: Any) -> None:
    peer.send_content(1, "tunnel.request", body, properties, meta_data={"k": "v"})
    peer.call(1, "channel.flow", active=True)  # the broker handled the request (0-9 and 0-10)


@in_both_dialects()
def test_data_without_broadcast_goes_to_the_first_other_endpoint_only(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    sender, first, second = _endpoints(peer_factory, 3)
    _request(first, b"", proxy_name=name)
    _request(second, b"", proxy_name=name)
    _request(sender, b"one", proxy_name=name, data_name="d1")
    got = first.expect(1, "tunnel.request")
    assert (got.body, got.properties.data_name, got.method.meta_data) == (b"one", "d1", {"k": "v"})
    second.nothing(1, "tunnel.request")
    sender.nothing(1, "tunnel.request")


@in_both_dialects()
def test_data_that_finds_no_endpoint_is_dropped_unless_durable(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    sender, late = _endpoints(peer_factory, 2)
    _request(sender, b"transient", proxy_name=name)
    _request(sender, b"durable", proxy_name=name, durable=1)
    _request(late, b"", proxy_name=name)
    assert late.expect(1, "tunnel.request").body == b"durable"
    late.nothing(1, "tunnel.request")


@in_both_dialects()
def test_a_request_without_proxy_name_is_a_precondition_failure(peer: Peer) -> None:
    peer.send_content(1, "tunnel.request", b"data", {"data_name": "d"}, meta_data={})
    assert peer.channel_error(1) == 406
