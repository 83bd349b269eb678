"""The draft's MUST rules of the connection and channel classes that need brokers of their
own (virtual hosts, restarts) or the draft's channel life cycle, and the durable queue
rule that needs a restart. The connection rules the draft keeps word for word from 0-9
run against both dialects in tests/spec09 (``dialects.in_both_dialects``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_10
from broker import Broker
from tests.spec09.conftest import broker_with, restarted  # noqa: F401 (fixtures)
from tests.spec09.flows import declare_queue, get_body
from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


@rule("connection.open.virtual-host:separation")
def test_virtual_hosts_share_no_exchange_queue_or_message(
    broker_with: Callable[..., Broker],  # noqa: F811
) -> None:
    broker = broker_with(
        vhosts=["/", "other"], users={"guest": {"password": "guest", "vhosts": ["/", "other"]}}
    )
    home = Peer(broker.url, SPEC_0_10)
    other = Peer(broker.url, SPEC_0_10, virtual_host="other")
    try:
        for peer in (home, other):
            peer.open_channel(1)
            declare_queue(peer, 1, "same-name")
        home.call(1, "exchange.declare", exchange="only-home", type="fanout")
        home.send_content(1, "basic.publish", b"home", exchange="", routing_key="same-name")
        assert other.call(1, "basic.get", queue="same-name").NAME == "basic.get-empty"
        assert get_body(home, 1, "same-name") == b"home"
        assert other.call(1, "exchange.query", name="only-home").not_found
        other.send(1, "exchange.declare", exchange="only-home", type="fanout", passive=True)
        assert other.error(1) == ("channel", 404)
    finally:
        home.close()
        other.close()


@rule("channel.close:stability")
def test_after_the_servers_channel_close_only_close_ok_is_answered(peer: Peer, name: str) -> None:
    peer.send(1, "queue.declare", queue=name, passive=True)
    close = peer.expect(1, "channel.close").method
    assert close.reply_code == 404
    peer.send(1, "queue.declare", queue=name)  # discarded: it would create the queue
    peer.send(1, "channel.close-ok")
    peer.open_channel(1)
    peer.send(1, "queue.declare", queue=name, passive=True)
    assert peer.error(1) == ("channel", 404)


@rule("queue.declare.durable:persistence")
def test_durable_queues_and_their_bindings_survive_a_restart(
    restarted: Callable[[], Broker],  # noqa: F811
) -> None:
    peer = Peer(restarted().url, SPEC_0_10)
    peer.open_channel(1)
    peer.call(1, "exchange.declare", exchange="durable-ex-010", type="direct", durable=True)
    declare_queue(peer, 1, "durable-q-010", durable=True)
    declare_queue(peer, 1, "transient-q-010")
    peer.call(1, "queue.bind", queue="durable-q-010", exchange="durable-ex-010", routing_key="k")
    peer.close()
    peer = Peer(restarted().url, SPEC_0_10)
    try:
        peer.open_channel(1)
        peer.send_content(1, "basic.publish", b"after", exchange="durable-ex-010", routing_key="k")
        assert get_body(peer, 1, "durable-q-010") == b"after"
        peer.send(1, "queue.declare", queue="transient-q-010", passive=True)
        assert peer.error(1) == ("channel", 404)
    finally:
        peer.close()
