"""0-9 rules of exchange and queue declaration, deletion and binding, over the raw peer (it
tells connection exceptions from channel exceptions)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_9
from amqp_spark.client import connect
from broker import Broker

from .dialects import in_both_dialects
from .flows import declare_internal_exchange, declare_queue, get_body
from .peer import Peer

rule = pytest.mark.spec_rule


@rule("exchange:default-access")
@pytest.mark.parametrize(
    ("method", "fields"),
    [
        ("exchange.declare", {"exchange": "", "type": "direct"}),
        ("exchange.delete", {"exchange": ""}),
        ("exchange.declare", {"exchange": "amq.default", "type": "direct"}),
    ],
)
def test_the_default_exchange_is_reached_only_by_its_empty_name(
    peer: Peer, name: str, method: str, fields: dict[str, str]
) -> None:
    declare_queue(peer, 1, name)
    peer.send_content(1, "basic.publish", b"by name", exchange="", routing_key=name)
    assert get_body(peer, 1, name) == b"by name"
    peer.send(1, method, **fields)
    assert peer.error(1) == ("channel", 403)


@rule("exchange:recommended-types")
def test_topic_and_headers_exchanges_route(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "queue.bind", queue=name, exchange="amq.topic", routing_key="a.*")
    peer.call(
        1, "queue.bind", queue=name, exchange="amq.headers", arguments={"x-match": "all", "h": 1}
    )
    peer.send_content(1, "basic.publish", b"t", exchange="amq.topic", routing_key="a.b")
    peer.send_content(1, "basic.publish", b"h", {"headers": {"h": 1}}, exchange="amq.headers")
    bodies = {get_body(peer, 1, name) for _ in range(2)}
    assert bodies == {b"t", b"h"}


@in_both_dialects(
    "exchange.declare.auto-delete:sticky", draft=("exchange.declare.auto-delete:sticky",)
)
def test_redeclaring_an_exchange_ignores_auto_delete(peer: Peer, name: str) -> None:
    peer.call(1, "exchange.declare", exchange=name, type="fanout", auto_delete=False)
    peer.call(1, "exchange.declare", exchange=name, type="fanout", auto_delete=True)
    queue = declare_queue(peer, 1, "")
    peer.call(1, "queue.bind", queue=queue, exchange=name)
    peer.call(1, "queue.unbind", queue=queue, exchange=name)
    peer.call(1, "exchange.declare", exchange=name, type="fanout", passive=True)


@in_both_dialects("exchange.delete.exchange:exists", draft=("exchange.delete.exchange:exists",))
def test_deleting_a_missing_exchange_is_404(peer: Peer, name: str) -> None:
    peer.send(1, "exchange.delete", exchange=name)
    assert peer.error(1) == ("channel", 404)


@rule("exchange.declare:minimum")
def test_sixteen_exchanges_per_virtual_host(peer: Peer, name: str) -> None:
    for i in range(16):
        peer.call(1, "exchange.declare", exchange=f"{name}-{i}", type="direct", auto_delete=True)
    for i in range(16):
        peer.call(1, "exchange.delete", exchange=f"{name}-{i}")


@rule("queue.declare:minimum-queues")
def test_256_queues_per_virtual_host(peer: Peer, name: str) -> None:
    for i in range(256):
        peer.send(1, "queue.declare", queue=f"{name}-{i}", no_wait=True)
    assert peer.call(1, "queue.declare", queue=f"{name}-255", passive=True).queue
    for i in range(256):
        peer.send(1, "queue.delete", queue=f"{name}-{i}", no_wait=True)
    peer.send(1, "queue.declare", queue=f"{name}-0", passive=True)
    assert peer.error(1) == ("channel", 404)


@in_both_dialects(
    "queue.declare.queue:reserved-prefix", draft=("queue.declare.queue:reserved-prefix",)
)
def test_declaring_an_amq_queue_is_refused(peer: Peer) -> None:
    peer.send(1, "queue.declare", queue="amq.mine")
    assert peer.error(1) == ("channel", 403)


@rule("queue.declare.passive:passive")
def test_a_passive_declare_asserts_without_creating(peer: Peer, name: str) -> None:
    peer.send(1, "queue.declare", queue=name, passive=True)
    assert peer.error(1) == ("channel", 404)
    peer.open_channel(2)
    declare_queue(peer, 2, name)
    assert peer.call(2, "queue.declare", queue=name, passive=True).queue == name


_PRE_EXISTENCE = ("queue.declare.durable:pre-existence", "queue.declare.auto-delete:pre-existence")


@in_both_dialects(*_PRE_EXISTENCE, draft=_PRE_EXISTENCE)
def test_redeclaring_a_queue_ignores_durable_and_auto_delete(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name, durable=False, auto_delete=False)
    declare_queue(peer, 1, name, durable=True, auto_delete=True)
    tag = peer.call(1, "basic.consume", queue=name).consumer_tag
    peer.call(1, "basic.cancel", consumer_tag=tag)
    assert peer.call(1, "queue.declare", queue=name, passive=True).queue == name


@rule("queue.declare.exclusive:02")
def test_an_exclusive_queue_cannot_be_declared_from_another_connection(
    peer_factory: Callable[..., Peer], peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name, exclusive=True)
    other = peer_factory()
    other.open_channel(1)
    other.send(1, "queue.declare", queue=name, exclusive=True)
    assert other.error(1) == ("channel", 405)


@in_both_dialects("queue.bind:failure", draft=("queue.bind:failure",))
@pytest.mark.parametrize("missing", ["queue", "exchange"])
def test_a_failed_bind_is_a_connection_exception(peer: Peer, name: str, missing: str) -> None:
    queue = declare_queue(peer, 1, "")
    fields = {"queue": queue, "exchange": "amq.direct", missing: f"{name}-missing"}
    peer.send(1, "queue.bind", routing_key="k", **fields)
    assert peer.error(1) == ("connection", 404)


@in_both_dialects("queue.unbind:01", draft=("queue.unbind:failure",))
def test_a_failed_unbind_is_a_connection_exception(peer: Peer, name: str) -> None:
    peer.send(1, "queue.unbind", queue=name, exchange="amq.direct", routing_key="k")
    assert peer.error(1) == ("connection", 404)


@in_both_dialects("queue.bind:transient-exchange", draft=("queue.bind:transient-exchange",))
def test_a_durable_queue_cannot_bind_to_a_transient_exchange(peer: Peer, name: str) -> None:
    peer.call(1, "exchange.declare", exchange=name, type="direct", durable=False)
    queue = declare_queue(peer, 1, f"{name}-q", durable=True)
    peer.send(1, "queue.bind", queue=queue, exchange=name, routing_key="k")
    assert peer.error(1) == ("connection", 530)


@in_both_dialects("queue.bind:internal-exchange", draft=("queue.bind:internal-exchange",))
def test_binding_to_an_internal_exchange_is_530(
    bundled_broker_url: str, peer: Peer, name: str
) -> None:
    declare_internal_exchange(bundled_broker_url, name)
    queue = declare_queue(peer, 1, "")
    peer.send(1, "queue.bind", queue=queue, exchange=name)
    assert peer.error(1) == ("connection", 530)


@in_both_dialects("queue.bind.queue:empty-queue", draft=("queue.bind.queue:empty-queue",))
def test_binding_an_unnamed_queue_without_a_declared_one_is_refused(peer: Peer) -> None:
    peer.send(1, "queue.bind", queue="", exchange="amq.direct", routing_key="k")
    assert peer.error(1) == ("connection", 530)


@rule("queue.bind:binding-count")
def test_four_bindings_on_one_queue_all_route(peer: Peer, name: str) -> None:
    queue = declare_queue(peer, 1, name)
    keys = [f"k{i}" for i in range(4)]
    for key in keys:
        peer.call(1, "queue.bind", queue=queue, exchange="amq.direct", routing_key=key)
    for key in keys:
        peer.send_content(1, "basic.publish", key.encode(), exchange="amq.direct", routing_key=key)
    assert peer.call(1, "queue.declare", queue=queue, passive=True).message_count == 4


@in_both_dialects("queue.delete.queue:02", draft=("queue.delete.queue:queue-exists",))
def test_deleting_a_missing_queue_is_404(peer: Peer, name: str) -> None:
    peer.send(1, "queue.delete", queue=name)
    assert peer.error(1) == ("channel", 404)


@rule(
    "queue.declare.durable:persistence",
    "queue.bind:durable-exchange",
    "exchange.declare.durable:sticky",
)
def test_durable_queues_exchanges_and_bindings_survive_a_restart(
    restarted: Callable[[], Broker],
) -> None:
    with connect(restarted().url, spec=SPEC_0_9) as conn:
        ch = conn.channel()
        ch.exchange_declare("durable-ex", "direct", durable=True)
        ch.queue_declare("durable-q", durable=True)
        ch.queue_bind("durable-q", "durable-ex", "k")
    with connect(restarted().url, spec=SPEC_0_9) as conn:
        ch = conn.channel()
        ch.queue_declare("durable-q", passive=True)
        ch.basic_publish("durable-ex", "k", b"routed after restart")
        delivery = ch.basic_get("durable-q", no_ack=True)
        assert delivery is not None and delivery.body == b"routed after restart"
