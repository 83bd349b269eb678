"""/metrics in Prometheus' text format with rabbitmq_prometheus' names, read with
prometheus_client's own parser."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker import Broker
from tests.management.conftest import Api


def _scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {
        sample.name: [(s.labels, s.value) for s in family.samples if s.name == sample.name]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_have_rabbitmqs_names(broker: Broker, api: Api, channel: object) -> None:
    ch = channel
    ch.queue_declare("m1")  # type: ignore[attr-defined]
    ch.queue_declare("m2")  # type: ignore[attr-defined]
    for _ in range(3):
        ch.basic_publish("", "m1", b"x")  # type: ignore[attr-defined]
    ch.basic_publish("", "m2", b"y")  # type: ignore[attr-defined]
    ch.basic_get("m2", auto_ack=False)  # type: ignore[attr-defined]
    metrics = _scrape(broker.management_url + "metrics")
    assert metrics["rabbitmq_connections"] == [({}, 1.0)]
    assert metrics["rabbitmq_channels"] == [({}, 1.0)]
    assert metrics["rabbitmq_queues"] == [({}, 2.0)]
    assert metrics["rabbitmq_queue_messages_ready"] == [({}, 3.0)]
    assert metrics["rabbitmq_queue_messages_unacked"] == [({}, 1.0)]
    assert metrics["rabbitmq_queue_consumers"] == [({}, 0.0)]
    protocol = {"protocol": "amqp091"}
    assert metrics["rabbitmq_global_messages_received_total"] == [(protocol, 4.0)]
    assert metrics["rabbitmq_global_messages_delivered_total"] == [(protocol, 1.0)]
    assert metrics["rabbitmq_global_messages_delivered_get_manual_ack_total"] == [(protocol, 1.0)]
    assert metrics["rabbitmq_global_messages_confirmed_total"] == [(protocol, 0.0)]
    assert "rabbitmq_build_info" in metrics


def test_per_object_metrics_are_labelled_by_vhost_and_queue(
    broker: Broker, api: Api, channel: object
) -> None:
    channel.queue_declare("m1")  # type: ignore[attr-defined]
    channel.basic_publish("", "m1", b"x")  # type: ignore[attr-defined]
    api.ok("PUT", "/api/vhosts/v", {})
    api.ok("PUT", "/api/queues/v/m1", {})
    metrics = _scrape(broker.management_url + "metrics/per-object")
    assert sorted(
        (labels["vhost"], labels["queue"], value)
        for labels, value in metrics["rabbitmq_queue_messages_ready"]
    ) == [("/", "m1", 1.0), ("v", "m1", 0.0)]
    published = metrics["rabbitmq_queue_messages_published_total"]
    assert ({"vhost": "/", "queue": "m1"}, 1.0) in published


def test_metrics_need_no_credentials(broker: Broker) -> None:
    with urllib.request.urlopen(broker.management_url + "metrics", timeout=10) as response:
        assert response.status == 200


def test_a_prometheus_port_serves_metrics_alone() -> None:
    with Broker(config={"management": {"prometheus_port": 0}}) as b:
        assert b.server.management is not None
        port = b.server.management.prometheus_port
        assert port and f":{port}/" not in b.management_url
        metrics = _scrape(f"http://127.0.0.1:{port}/metrics")
        assert metrics["rabbitmq_connections"] == [({}, 0.0)]
        with pytest.raises(urllib.error.HTTPError) as not_there:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/overview", timeout=10)
        assert not_there.value.code == 404
