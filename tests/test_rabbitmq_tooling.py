"""The private RabbitMQ nodes the tests use really work."""

import socket
import subprocess
from pathlib import Path

import pika
import pytest

from tests.support.fixtures import private_rabbitmq_node

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

        received: list[bytes] = []
        for _ in bodies:
            method, _properties, body = channel.basic_get(queue, auto_ack=True)
            assert method is not None, f"queue ran dry after {len(received)} messages"
            received.append(body)
        assert received == bodies
        assert channel.basic_get(queue, auto_ack=True) == (None, None, None)
    finally:
        connection.close()


@pytest.mark.parametrize("major", [4, 3])
def test_a_private_node_answers_rabbitmqctl_and_leaves_nothing_behind(major: int) -> None:
    """A node of each kind (RabbitMQ 4 from its trixie root, 3.10 from the host) takes
    rabbitmqctl, and once stopped leaves no process (found by its state directory's name,
    which its command line carries), epmd, state directory or mount."""
    with private_rabbitmq_node("to stop", major=major) as node:
        assert f"{major}." in node.ctl("version")
        state = node.log_path.parent
        running = _processes_naming(state.name)
        epmd = ("127.0.0.1", node.epmd_port)
        root = node.install.root
        assert running and _answers(epmd)
    assert not state.exists()
    assert _processes_naming(state.name) == []
    assert not _answers(epmd)
    if root is not None:
        assert str(root) not in Path("/proc/mounts").read_text()


def _processes_naming(text: str) -> list[str]:
    return subprocess.run(
        ["pgrep", "-f", text], capture_output=True, text=True, check=False
    ).stdout.split()


def _answers(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=2).close()
    except OSError:
        return False
    return True
