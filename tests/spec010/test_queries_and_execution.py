"""exchange.query, binding.query (class 130) and execution flush/complete (class 140)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _exchange_query(peer: Peer, exchange: str) -> Any:
    """exchange.query's reply (its field ``name`` is also ``Peer.call``'s parameter)."""
    query = peer.spec.method("exchange.query")(name=exchange)
    peer.sock.sendall(peer.proto.send_method(1, query))
    return peer.expect(1, "exchange.query-ok").method


def test_exchange_query_reports_type_durability_and_arguments(peer: Peer, name: str) -> None:
    peer.send(1, "exchange.declare", exchange=name, type="topic", durable=False)
    ok = _exchange_query(peer, name)
    assert (ok.type, ok.durable, ok.not_found) == ("topic", False, False)
    assert _exchange_query(peer, "amq.direct").durable is True


def test_exchange_query_of_an_unknown_exchange_is_not_found(peer: Peer, name: str) -> None:
    assert _exchange_query(peer, name + "-none").not_found is True


def test_exchange_query_empty_name_is_the_default_exchange(peer: Peer) -> None:
    ok = _exchange_query(peer, "")
    assert (ok.type, ok.not_found) == ("direct", False)


def _bound(peer: Peer, name: str) -> None:
    peer.send(1, "exchange.declare", exchange=name, type="headers")
    peer.call(1, "queue.declare", queue=name)
    peer.send(1, "queue.bind", queue=name, exchange=name, routing_key="k", arguments={"a": "1"})


def _flags(ok: object) -> tuple[bool, ...]:
    return tuple(
        getattr(ok, f)
        for f in (
            "exchange_not_found",
            "queue_not_found",
            "queue_not_matched",
            "key_not_matched",
            "args_not_matched",
        )
    )


def test_binding_query_matches_queue_key_and_arguments(peer: Peer, name: str) -> None:
    _bound(peer, name)
    ok = peer.call(1, "binding.query", exchange=name, queue=name, routing_key="k",
                   arguments={"a": "1"})  # fmt: skip
    assert _flags(ok) == (False,) * 5


def test_binding_query_reports_what_did_not_match(peer: Peer, name: str) -> None:
    _bound(peer, name)
    peer.call(1, "queue.declare", queue=name + "-other")
    assert _flags(peer.call(1, "binding.query", exchange=name, queue=name + "-other")) == (
        False, False, True, False, False,
    )  # fmt: skip
    assert _flags(peer.call(1, "binding.query", exchange=name, routing_key="x")) == (
        False, False, False, True, False,
    )  # fmt: skip
    assert _flags(peer.call(1, "binding.query", exchange=name, arguments={"a": "2"})) == (
        False, False, False, False, True,
    )  # fmt: skip


def test_binding_query_unknown_exchange_and_queue(peer: Peer, name: str) -> None:
    assert _flags(peer.call(1, "binding.query", exchange=name + "-none"))[0] is True
    _bound(peer, name)
    assert _flags(peer.call(1, "binding.query", exchange=name, queue=name + "-none"))[1] is True


def test_binding_query_default_exchange_binds_every_queue_by_its_name(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    ok = peer.call(1, "binding.query", exchange="", queue=name, routing_key=name)
    assert _flags(ok) == (False,) * 5


@rule("execution.complete:unique-encoding")
def test_rule_execution_complete_unique_encoding_flush_reports_every_command_done(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)  # command 1
    peer.send_content(1, "basic.publish", b"x", exchange="", routing_key=name)  # 2
    peer.call(1, "basic.get", "basic.get-ok", queue=name, no_ack=True)  # 3
    peer.send(1, "execution.flush")
    complete = peer.expect(1, "execution.complete").method
    assert (complete.cumulative_execution_mark, complete.ranged_execution_set) == (3, [])
