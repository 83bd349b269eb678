"""tx and dtx, tunnel, channel resume/ping/pong, exchange.bound, basic.recover-sync, 0-8."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_8

from .flows import declare_queue, publish_file, receive_file
from .peer import Peer

rule = pytest.mark.spec_rule


def test_file_publishes_in_a_transaction_wait_for_commit(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "tx.select")
    publish_file(peer, 1, name, b"tx-file", f"tx-{name}")
    assert peer.call(1, "file.consume", queue=name, no_ack=True)
    peer.nothing(1, "file.open")
    peer.call(1, "tx.commit")
    assert receive_file(peer, 1)[1] == b"tx-file"


def test_a_rolled_back_stream_publish_is_never_delivered(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "tx.select")
    peer.send_content(1, "stream.publish", b"x", exchange="", routing_key=name)
    peer.call(1, "tx.rollback")
    peer.call(1, "stream.consume", queue=name)
    peer.nothing(1, "stream.deliver")


def test_dtx_start_takes_an_identifier_after_select(peer: Peer) -> None:
    peer.call(1, "dtx.select")
    assert peer.call(1, "dtx.start", dtx_identifier="xid-1").NAME == "dtx.start-ok"


def test_dtx_start_before_select_is_refused(peer: Peer) -> None:
    peer.send(1, "dtx.start", dtx_identifier="xid-1")
    assert peer.channel_error(1) == 406


def test_tunnel_data_reaches_the_other_endpoints_of_its_proxy(
    peer_factory: Callable[..., Peer],
) -> None:
    a, b, c = (peer_factory() for _ in range(3))
    for p in (a, b, c):
        p.open_channel(1)
    props = {"proxy_name": "px", "data_name": "hello"}
    b.send_content(1, "tunnel.request", b"", props, meta_data={})
    c.send_content(1, "tunnel.request", b"", props, meta_data={})
    a.send_content(1, "tunnel.request", b"payload", {**props, "broadcast": 1}, meta_data={"k": 1})
    for receiver in (b, c):
        got = receiver.expect(1, "tunnel.request")
        assert (got.body, got.properties.data_name) == (b"payload", "hello")


def test_durable_tunnel_data_waits_for_an_endpoint(peer_factory: Callable[..., Peer]) -> None:
    a, b = peer_factory(), peer_factory()
    a.open_channel(1)
    b.open_channel(1)
    a.send_content(1, "tunnel.request", b"kept", {"proxy_name": "dur", "durable": 1}, meta_data={})
    a.call(1, "channel.ping")  # the request was handled
    b.send_content(1, "tunnel.request", b"", {"proxy_name": "dur"}, meta_data={})
    assert b.expect(1, "tunnel.request").body == b"kept"


@pytest.mark.parametrize("method", ["channel.ping", "channel.pong"])
def test_ping_and_pong_are_answered_with_channel_ok(peer: Peer, method: str) -> None:
    assert peer.call(1, method).NAME == "channel.ok"


def test_channel_resume_is_answered_with_channel_ok(peer: Peer) -> None:
    assert peer.call(1, "channel.resume", channel_id=b"1").NAME == "channel.ok"


def test_exchange_bound_reports_bindings(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "queue.bind", queue=name, exchange="amq.direct", routing_key="k")

    def bound(exchange: str, routing_key: str, queue: str) -> int:
        reply = peer.call(
            1,
            "exchange.bound",
            exchange=exchange,
            routing_key=routing_key,
            queue=queue,
            reply="exchange.bound-ok",
        )
        return int(reply.reply_code)

    assert bound("amq.direct", "k", name) == 0
    assert bound("amq.direct", "x", name) == 312
    assert bound("nope-" + name, "", "") == 404


@rule("basic.recover:01")
def test_recover_sync_redelivers_marked_redelivered(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.send_content(1, "basic.publish", b"r", exchange="", routing_key=name)
    assert not peer.call(1, "basic.get", queue=name).redelivered
    assert peer.call(1, "basic.recover-sync", requeue=True).NAME == "basic.recover-sync-ok"
    assert peer.call(1, "basic.get", queue=name, no_ack=True).redelivered


@rule("basic.recover:02")
def test_basic_recover_on_a_transacted_channel_is_a_channel_error(peer: Peer) -> None:
    peer.call(1, "tx.select")
    peer.send(1, "basic.recover", requeue=True)
    assert peer.channel_error(1) == 406


def test_a_0_8_client_negotiates_and_uses_the_file_class(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    old = peer_factory(spec=SPEC_0_8)
    old.open_channel(1)
    declare_queue(old, 1, name)
    publish_file(old, 1, name, b"0-8 file", f"08-{name}")
    old.call(1, "file.consume", queue=name, no_ack=True)
    assert receive_file(old, 1)[1] == b"0-8 file"
