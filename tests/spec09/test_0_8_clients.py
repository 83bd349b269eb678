"""AMQP 0-8 clients: the project's client speaking 0-8 works as it does in 0-9-1, and the
protocol header of py-amqplib (the Python 0-8 client, ``AMQP 1 1 9 1``) opens a 0-8
connection, as RabbitMQ treats it."""

from __future__ import annotations

import pytest

from amqp_protocol import SPEC_0_8, values
from amqp_spark.client import connect

from .peer import Peer

#: What py-amqplib 1.0.2 (amqplib/client_0_8/transport.py) sends first.
PY_AMQPLIB_HEADER = b"AMQP\x01\x01\x09\x01"


def test_the_projects_client_speaking_0_8_publishes_gets_consumes_and_acks(
    bundled_broker_url: str,
) -> None:
    with connect(bundled_broker_url, spec=SPEC_0_8) as conn, conn.channel() as ch:
        queue = ch.queue_declare("", exclusive=True).queue
        ch.basic_publish("", queue, b"first", {"content_type": "text/plain"})
        got = ch.basic_get(queue)
        assert got is not None and (got.body, got.properties.fields()["content_type"]) == (
            b"first",
            "text/plain",
        )
        ch.basic_ack(got.delivery_tag)
        ch.basic_publish("", queue, b"second")
        ch.basic_qos(prefetch_count=1)
        tag = ch.basic_consume(queue)
        delivery = ch.next_delivery(timeout=5)
        assert delivery is not None and (delivery.body, delivery.redelivered) == (b"second", False)
        ch.basic_ack(delivery.delivery_tag)
        ch.basic_cancel(tag)
        ch.tx_select()
        ch.basic_publish("", queue, b"in a transaction")
        ch.tx_rollback()
        assert ch.queue_declare(queue, passive=True).message_count == 0


@pytest.mark.parametrize("broker_url", ["bundled"], indirect=True)
def test_a_session_as_py_amqplib_runs_it_works_as_on_rabbitmq(broker_url: str) -> None:
    """py-amqplib 1.0.2's own steps: its header, AMQPLAIN with a table without its length,
    connection.open without insist, access.request onto /data, then basic methods with the
    ticket it got. RabbitMQ 3.10 answered the header with 0-8's connection.start (version
    8-0), as the bundled broker does; the bundled broker only, since RabbitMQ 4 no longer
    speaks 0-8 (it answers the header with AMQP 1.0's)."""
    peer = Peer(broker_url, SPEC_0_8, handshake=False, header=PY_AMQPLIB_HEADER)
    try:
        assert (peer.start.version_major, peer.start.version_minor) == (8, 0)
        login = values.encode_table({"LOGIN": "guest", "PASSWORD": "guest"})[4:]
        tune = peer.login("guest", "guest", mechanism="AMQPLAIN", response=login)
        peer.tune(tune.channel_max, tune.frame_max)
        peer.expect_reply(peer.open("/", insist=False), "connection.open-ok")
        peer.open_channel(1)
        ticket = peer.call(1, "access.request", realm="/data", active=True, write=True, read=True)
        queue = peer.call(1, "queue.declare", ticket=ticket.ticket, queue="", exclusive=True).queue
        peer.send_content(
            1, "basic.publish", b"from 0-8", ticket=ticket.ticket, exchange="", routing_key=queue
        )
        peer.send(1, "basic.get", ticket=ticket.ticket, queue=queue, no_ack=True)
        assert peer.expect(1, "basic.get-ok").body == b"from 0-8"
    finally:
        peer.close()
