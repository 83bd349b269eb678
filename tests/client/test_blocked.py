"""connection.blocked (RabbitMQ's resource alarms): publishers wait while the server blocks
the connection, with a timeout, and go on once it unblocks.

The alarm is raised on a private RabbitMQ node with ``rabbitmqctl
set_vm_memory_high_watermark``; the shared ``rabbitmq_url`` node is left alone so that an
alarm cannot leak into other tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from amqp_protocol import SPEC_0_9_1
from amqp_spark.client import ClientTimeout, connect
from testbed.rabbitmq import RabbitMQNode
from testbed.waiting import holds_within
from tests.client.conftest import message_count
from tests.support.fixtures import private_rabbitmq_node

pytestmark = [
    pytest.mark.rabbitmq,
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not SPEC_0_9_1.has_method("connection.blocked"),
        reason="the protocol layer's 0-9-1 spec lacks RabbitMQ's connection.blocked/unblocked "
        "(class 10, methods 60/61), so the client cannot announce the capability",
    ),
]


class AlarmedNode:
    def __init__(self, node: RabbitMQNode) -> None:
        self.node = node

    def set_memory_watermark(self, fraction: str) -> None:
        self.node.ctl("set_vm_memory_high_watermark", fraction)


@pytest.fixture(scope="module")
def node() -> Iterator[AlarmedNode]:
    with private_rabbitmq_node("to raise an alarm on") as n:
        yield AlarmedNode(n)


def test_publishers_wait_while_blocked_and_resume_when_unblocked(node: AlarmedNode) -> None:
    with connect(node.node.url) as conn, conn.channel() as ch:
        queue = ch.queue_declare("", exclusive=True).queue
        ch.confirm_select()
        node.set_memory_watermark("0.0000001")
        try:
            ch.basic_publish("", queue, b"triggers the block")
            assert holds_within(lambda: conn.blocked, 10.0)
            conn.blocked_timeout = 0.5
            with pytest.raises(ClientTimeout, match="blocked"):
                ch.basic_publish("", queue, b"must wait")
            conn.blocked_timeout = 30
            threading.Timer(1.0, node.set_memory_watermark, ("0.4",)).start()
            began = time.monotonic()
            ch.basic_publish("", queue, b"after the alarm")
            assert time.monotonic() - began >= 0.5
            assert not conn.blocked
        finally:
            node.set_memory_watermark("0.4")
        ch.wait_for_confirms()
        assert message_count(ch, queue) == 2
