"""A listing of many objects runs on the broker's event loop in slices, the loop free in
between: an AMQP request that arrives while ``GET /api/queues`` is being built is answered
before the listing has built its last item. Checked by the order of events (how many items
were built when the answer came), not by how long anything took."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from broker import Broker
from broker.management import queues
from testbed.raw_client import M, call, next_method, open_raw
from tests.management.conftest import Api

QUEUES = 5000


@pytest.fixture(scope="module")
def crowded() -> Iterator[Broker]:
    """A broker with QUEUES queues, declared by the model on the broker's loop (over AMQP
    that would take minutes on a loaded machine)."""

    async def declare(broker: Broker) -> None:
        vhost = broker.server.vhosts["/"]
        for n in range(QUEUES):
            vhost.declare_queue(f"q-{n:05d}", owner=None)

    with Broker() as b:
        b.run_on_loop(declare(b), 120)
        yield b


def test_an_amqp_request_is_answered_while_a_big_queue_listing_is_built(
    crowded: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = 0
    listing_began, request_sent = threading.Event(), threading.Event()
    queue_info = queues.queue_info

    def counted(*args: Any) -> Any:
        """queue_info, counting; at the first item it waits (bounded) until the AMQP
        request is in the broker's socket, so the request arrives mid-listing however the
        machine schedules the test's threads."""
        nonlocal built
        built += 1
        if built == 1:
            listing_began.set()
            request_sent.wait(30)
        return queue_info(*args)

    monkeypatch.setattr(queues, "queue_info", counted)
    sock, conn = open_raw(crowded.port, timeout=60)
    with sock:
        assert call(sock, conn, 1, M("channel.open")()).NAME == "channel.open-ok"
        listed: list[Any] = []
        listing = threading.Thread(
            target=lambda: listed.append(Api(crowded.management_url).get("/api/queues"))
        )
        listing.start()
        try:
            assert listing_began.wait(60)
            sock.sendall(conn.send_method(1, M("basic.qos")(prefetch_count=1)))
            request_sent.set()
            reply = next_method(sock, conn, 1)
            built_when_answered = built
        finally:
            request_sent.set()
            listing.join(120)
    assert reply.NAME == "basic.qos-ok"
    assert built_when_answered < QUEUES
    assert [q["name"] for q in listed[0]] == [f"q-{n:05d}" for n in range(QUEUES)]


def test_a_big_listing_pages_sorts_and_filters_as_a_small_one(crowded: Broker) -> None:
    api = Api(crowded.management_url)
    page = api.get("/api/queues?page=3&page_size=500&sort=name&sort_reverse=true")
    assert (page["page"], page["page_count"], page["total_count"], page["item_count"]) == (
        3,
        QUEUES // 500,
        QUEUES,
        500,
    )
    assert page["items"][0]["name"] == f"q-{QUEUES - 1001:05d}"
    matching = api.get("/api/queues?name=^q-0012.$&use_regex=true&columns=name")
    assert matching == [{"name": f"q-{n:05d}"} for n in range(120, 130)]
