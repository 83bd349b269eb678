"""The private RabbitMQ node the tests use really works."""

import pika
import pytest

pytestmark = pytest.mark.rabbitmq


def test_publish_with_confirms_and_get_back(rabbitmq_url: str) -> None:
    bodies = [f"message {i}".encode() for i in range(10)]
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        channel = connection.channel()
        queue = channel.queue_declare(queue="", exclusive=True).method.queue
        channel.confirm_delivery()
        for body in bodies:
            # With confirms on, basic_publish raises unless the broker acks the message.
            channel.basic_publish(exchange="", routing_key=queue, body=body, mandatory=True)

        received = []
        for _ in bodies:
            method, _properties, body = channel.basic_get(queue, auto_ack=True)
            assert method is not None, f"queue ran dry after {len(received)} messages"
            received.append(body)
        assert received == bodies
        assert channel.basic_get(queue, auto_ack=True) == (None, None, None)
    finally:
        connection.close()
