"""Finding a super stream's partitions by naming survives a connection lost on the way (a
node of a cluster that dies while a sink's task looks the layout up): the lookup opens
another connection. Against the bundled broker, the loss made by cutting a proxy."""

from __future__ import annotations

from amqp_spark.client import Connection, connect
from amqp_spark.super_streams import find
from tests.spark.recording_proxy import RecordingProxy


def _declare_super_stream(url: str, name: str, partitions: int) -> None:
    with connect(url) as conn, conn.channel() as ch:
        ch.exchange_declare(name, "direct", durable=True)
        for index in range(partitions):
            ch.queue_declare(f"{name}-{index}", durable=True)
            ch.queue_bind(f"{name}-{index}", name, routing_key=str(index))


def test_a_connection_lost_while_finding_partitions_by_naming_is_replaced(
    bundled_broker_url: str,
) -> None:
    _declare_super_stream(bundled_broker_url, "naming-retry", 2)
    opened: list[Connection] = []
    with RecordingProxy(bundled_broker_url) as proxy:

        def dying_first() -> Connection:
            """The first connection goes through the proxy, which drops it at once."""
            conn = connect(proxy.url if not opened else bundled_broker_url)
            opened.append(conn)
            if len(opened) == 1:
                proxy.cut()
            return conn

        layout = find(bundled_broker_url, "naming-retry", None, dying_first)

    assert layout.streams == ("naming-retry-0", "naming-retry-1")
    assert len(opened) == 2
