"""message_stats: counts per queue, exchange, channel, connection and overall, as RabbitMQ
reports them, and rates from samples taken off the hot path."""

from __future__ import annotations

import time
from typing import Any

import pika

from broker import Broker
from broker.management.rates import SAMPLED, STEP, RateSampler
from broker.model.stats import FIELDS
from testbed.waiting import wait_until
from tests.management.conftest import Api


class _Object:
    """Something the sampler can hold a weak reference to."""


def test_counts_follow_publishes_confirms_deliveries_gets_and_acks(
    broker: Broker, api: Api
) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare("counted")
    for i in range(5):
        ch.basic_publish("", "counted", f"m{i}".encode())
    method, _, _ = ch.basic_get("counted", auto_ack=False)
    ch.basic_ack(method.delivery_tag)
    got: list[bytes] = []
    ch.basic_qos(prefetch_count=10)

    def on_message(c: Any, m: Any, p: Any, body: bytes) -> None:
        got.append(body)
        c.basic_ack(m.delivery_tag)

    ch.basic_consume("counted", on_message)
    while len(got) < 4:
        conn.process_data_events(time_limit=0.1)
    ch.basic_qos(prefetch_count=10)  # a round trip: the last ack has been read
    stats = api.get("/api/queues/%2F/counted")["message_stats"]
    assert {k: stats[k] for k in ("publish", "deliver", "get", "deliver_get", "ack")} == {
        "publish": 5,
        "deliver": 4,
        "get": 1,
        "deliver_get": 5,
        "ack": 5,
    }
    assert stats["publish_details"] == {"rate": 0.0}
    (channel,) = api.get("/api/channels")
    assert channel["message_stats"]["confirm"] == 5
    assert channel["message_stats"]["publish"] == 5
    (connection,) = api.get("/api/connections")
    assert connection["message_stats"]["ack"] == 5
    exchange = api.get("/api/exchanges/%2F/amq.default")["message_stats"]
    assert (exchange["publish_in"], exchange["publish_out"]) == (5, 5)
    conn.close()
    wait_until(
        lambda: api.get("/api/overview")["object_totals"]["connections"] == 0,
        5.0,
        "the overview to count no connection",
    )
    overall = api.get("/api/overview")["message_stats"]
    assert (overall["publish"], overall["confirm"], overall["deliver_get"], overall["ack"]) == (
        5,
        5,
        5,
        5,
    )


def test_a_redelivery_is_counted(broker: Broker, api: Api) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    ch = conn.channel()
    ch.queue_declare("again")
    ch.basic_publish("", "again", b"x")
    method, _, _ = ch.basic_get("again")
    ch.basic_nack(method.delivery_tag, requeue=True)
    method, _, _ = ch.basic_get("again")
    assert method.redelivered
    ch.basic_ack(method.delivery_tag)
    ch.basic_qos(prefetch_count=1)
    stats = api.get("/api/queues/%2F/again")["message_stats"]
    assert (stats["get"], stats["redeliver"], stats["ack"]) == (2, 1, 1)
    conn.close()


def test_a_queue_without_traffic_has_no_message_stats(api: Api) -> None:
    api.ok("PUT", "/api/queues/%2F/idle", {})
    assert "message_stats" not in api.get("/api/queues/%2F/idle")


def test_a_rate_is_the_change_between_the_last_two_samples() -> None:
    sampler, obj = RateSampler(), _Object()
    publish = SAMPLED.index("publish")
    assert sampler.rates(obj) == {}
    sampler.record(obj, 100.0, _sample(publish=10, get=5))
    assert sampler.rates(obj) == {}
    sampler.record(obj, 105.0, _sample(publish=60, get=10, deliver=10))
    rates = sampler.rates(obj)
    assert (rates["publish"], rates["deliver"], rates["get"], rates["deliver_get"]) == (
        10.0,
        2.0,
        1.0,
        3.0,
    )
    assert rates["ack"] == 0.0 and list(rates)[publish] == "publish"
    sampler.record(obj, 110.0, _sample(publish=60, get=10, deliver=10))
    assert sampler.rates(obj)["publish"] == 0.0


def _sample(**counts: int) -> tuple[int, ...]:
    return tuple(counts.get(name, 0) for name in FIELDS)


def test_samples_go_with_their_object() -> None:
    sampler, obj = RateSampler(), _Object()
    sampler.record(obj, 1.0, _sample(publish=1))
    del obj
    assert len(sampler._samples) == 0


def test_stream_and_quorum_queues_count_their_deliveries_too(broker: Broker, api: Api) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=10)
    for name, kind in (("s", "stream"), ("qq", "quorum")):
        ch.queue_declare(name, durable=True, arguments={"x-queue-type": kind})
        for i in range(3):
            ch.basic_publish("", name, f"{i}".encode())
    got: list[str] = []
    ch.basic_consume(
        "s", lambda c, m, p, b: got.append("s"), arguments={"x-stream-offset": "first"}
    )
    ch.basic_consume("qq", lambda c, m, p, b: got.append("qq"), auto_ack=True)
    deadline = time.monotonic() + 5
    while len(got) < 6 and time.monotonic() < deadline:
        conn.process_data_events(time_limit=0.1)
    stream, quorum = api.get("/api/queues/%2F/s"), api.get("/api/queues/%2F/qq")
    assert (stream["type"], stream["message_stats"]["deliver"]) == ("stream", 3)
    assert (quorum["type"], quorum["message_stats"]["deliver_no_ack"]) == ("quorum", 3)
    assert stream["message_stats"]["publish"] == quorum["message_stats"]["publish"] == 3
    conn.close()


def test_rates_in_the_api_come_from_the_last_two_samples(broker: Broker, api: Api) -> None:
    server = broker.server
    assert server.management is not None
    sampler = server.management.sampler

    async def tick(now: float) -> None:  # on the broker's loop, with a made-up clock
        assert server.management is not None and server.management._timer is not None
        server.management._timer.cancel()  # no sample at the real time in between
        sampler.tick(server, now)

    def tick_at(now: float) -> None:
        broker.run_on_loop(tick(now), 5)

    api.ok("PUT", "/api/queues/%2F/rated", {})
    tick_at(1000.0)
    body = {"routing_key": "rated", "payload": "x", "payload_encoding": "string", "properties": {}}
    for _ in range(10):
        api.ok("POST", "/api/exchanges/%2F/amq.default/publish", body)
    tick_at(1005.0)
    queue = api.get("/api/queues/%2F/rated")
    assert queue["message_stats"]["publish_details"] == {"rate": 2.0}
    assert queue["messages_details"] == {"rate": 2.0}
    overview = api.get("/api/overview")
    assert overview["message_stats"]["publish_details"] == {"rate": 2.0}
    assert api.get("/api/exchanges/%2F/amq.default")["message_stats"]["publish_in_details"] == {
        "rate": 2.0
    }


def test_a_tick_over_many_queues_pauses_every_step_and_samples_them_all(
    broker: Broker, api: Api
) -> None:
    server = broker.server
    sampler = RateSampler()
    clock = iter(range(10_000))

    async def run_steps() -> int:  # on the broker's loop, as the model wants
        for i in range(STEP * 2 + 10):
            server.vhosts["/"].declare_queue(f"many-{i}", owner=None)
        return sum(1 for _ in sampler.steps(server, lambda: float(next(clock))))

    assert broker.run_on_loop(run_steps(), 10) == 2
    queues = list(server.vhosts["/"].queues.values())
    assert all(sampler._samples.get(q) is not None for q in queues)
    first, last = sampler._samples[queues[0]][0][0], sampler._samples[queues[-1]][0][0]
    assert (first, last) == (0.0, 2.0)  # timed by the clock of its step
