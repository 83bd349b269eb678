"""Prometheus metrics with ``rabbitmq_prometheus``'s names and labels, so that RabbitMQ's
Grafana dashboards read the bundled broker: ``/metrics`` aggregated over all objects,
``/metrics/per-object`` (and ``/metrics/detailed``) per queue as well. Built with
``prometheus_client`` on each scrape from the model's counters; no authentication, as
RabbitMQ's plugin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..version import __version__
from .context import broker_of
from .node import RABBITMQ_VERSION, node_name, resident_memory
from .rates import counts_of, depths, overall_stats

if TYPE_CHECKING:
    from ..model.queues import Queue
    from ..model.vhost import VirtualHost
    from .managed import ManagedBroker

PROTOCOL = {"protocol": "amqp091"}
#: global counter name suffix -> the ``MessageStats`` count it reports
GLOBAL_COUNTERS = {
    "messages_received": ("publish", "Total number of messages received from publishers"),
    "messages_routed": ("publish", "Total number of messages routed to queues or streams"),
    "messages_confirmed": ("confirm", "Total number of messages confirmed to publishers"),
    "messages_delivered": ("deliver_get", "Total number of messages delivered to consumers"),
    "messages_delivered_consume_manual_ack": ("deliver", "Deliveries with manual acks"),
    "messages_delivered_consume_auto_ack": ("deliver_no_ack", "Deliveries with automatic acks"),
    "messages_delivered_get_manual_ack": ("get", "basic.get deliveries with manual acks"),
    "messages_delivered_get_auto_ack": ("get_no_ack", "basic.get deliveries with automatic acks"),
    "messages_redelivered": ("redeliver", "Total number of messages redelivered to consumers"),
    "messages_acknowledged": ("ack", "Total number of messages acknowledged by consumers"),
}
#: per-queue gauge -> (depths key or "consumers", help)
QUEUE_GAUGES = {
    "rabbitmq_queue_messages_ready": ("messages_ready", "Messages ready to be delivered"),
    "rabbitmq_queue_messages_unacked": ("messages_unacknowledged", "Messages delivered, not acked"),
    "rabbitmq_queue_messages": ("messages", "Sum of ready and unacknowledged messages"),
    "rabbitmq_queue_consumers": ("consumers", "Consumers on a queue"),
}


class BrokerCollector(Collector):
    def __init__(self, broker: ManagedBroker, per_object: bool) -> None:
        self.broker = broker
        self.per_object = per_object

    def collect(self) -> Iterator[Metric]:
        broker = self.broker
        channels = [c for conn in broker.connections for c in conn.snapshot().channels]
        queues = [(v, q) for v in broker.vhosts.values() for q in v.queues.values()]
        yield _gauge("rabbitmq_connections", "Connections currently open", len(broker.connections))
        yield _gauge("rabbitmq_channels", "Channels currently open", len(channels))
        yield _gauge("rabbitmq_queues", "Queues available", len(queues))
        consumers = sum(len(c.consumers) for c in channels)
        yield _gauge("rabbitmq_consumers", "Consumers currently connected", consumers)
        counts = counts_of(overall_stats(broker))
        for suffix, (key, help_text) in GLOBAL_COUNTERS.items():
            counter = CounterMetricFamily(
                f"rabbitmq_global_{suffix}", help_text, labels=list(PROTOCOL)
            )
            counter.add_metric(list(PROTOCOL.values()), counts[key])
            yield counter
        for name, (key, help_text) in QUEUE_GAUGES.items():
            labels = ["vhost", "queue"] if self.per_object else []
            family = GaugeMetricFamily(name, help_text, labels=labels)
            values = [(v.name, q.name, _queue_value(q, key)) for v, q in queues]
            if self.per_object:
                for vhost, queue, value in values:
                    family.add_metric([vhost, queue], value)
            else:
                family.add_metric([], sum(value for _, _, value in values))
            yield family
        if self.per_object:
            yield from _queue_counters(queues)
        yield _gauge(
            "rabbitmq_process_resident_memory_bytes", "Memory used in bytes", resident_memory()
        )
        yield _gauge(
            "rabbitmq_resident_memory_limit_bytes", "Memory high watermark", broker.memory.high
        )
        info = GaugeMetricFamily(
            "rabbitmq_build_info",
            "RabbitMQ & Erlang/OTP version info",
            labels=["rabbitmq_version", "prometheus_plugin_version", "product_version"],
        )
        info.add_metric([RABBITMQ_VERSION, RABBITMQ_VERSION, __version__], 1)
        yield info
        identity = GaugeMetricFamily(
            "rabbitmq_identity_info",
            "RabbitMQ node & cluster identity info",
            labels=["rabbitmq_node", "rabbitmq_cluster"],
        )
        identity.add_metric([node_name(), "amqp-spark"], 1)
        yield identity


def _queue_value(queue: Queue, key: str) -> int:
    if key == "consumers":
        return queue.consumer_count
    return depths(queue)[key]


def _queue_counters(queues: list[tuple[VirtualHost, Queue]]) -> Iterator[Metric]:
    for name, key, help_text in (
        ("rabbitmq_queue_messages_published_total", "publish", "Messages published to queues"),
        ("rabbitmq_queue_messages_delivered_total", "deliver_get", "Messages delivered"),
        ("rabbitmq_queue_messages_redelivered_total", "redeliver", "Messages redelivered"),
        ("rabbitmq_queue_messages_acked_total", "ack", "Messages acknowledged"),
    ):
        family = CounterMetricFamily(name[: -len("_total")], help_text, labels=["vhost", "queue"])
        for vhost, queue in queues:
            family.add_metric([vhost.name, queue.name], counts_of(queue.stats)[key])
        yield family


def _gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, value=value)


def exposition(broker: ManagedBroker, per_object: bool) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker, per_object))
    return generate_latest(registry)


async def get_metrics(request: web.Request) -> web.Response:
    per_object = request.path != "/metrics"
    body = exposition(broker_of(request), per_object)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def add_routes(router: web.UrlDispatcher) -> None:
    for path in ("/metrics", "/metrics/per-object", "/metrics/detailed"):
        router.add_get(path, get_metrics)
