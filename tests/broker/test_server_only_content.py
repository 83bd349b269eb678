"""A 0-9-1 client that sends a content-bearing method only a server sends (basic.return,
basic.deliver, basic.get-ok) gets 503 COMMAND_INVALID on the connection, as a 0-9 client
does, not an internal error."""

from __future__ import annotations

from typing import Any

import pytest

from amqp_protocol import SPEC_0_9_1
from broker import Broker
from testbed.raw_client import M, call, next_method, open_raw

SERVER_ONLY: dict[str, dict[str, Any]] = {
    "basic.return": {"reply_code": 312, "reply_text": "NO_ROUTE", "routing_key": "q"},
    "basic.deliver": {"consumer_tag": "c", "delivery_tag": 1, "routing_key": "q"},
    "basic.get-ok": {"delivery_tag": 1, "routing_key": "q", "message_count": 0},
}


@pytest.mark.parametrize("name", sorted(SERVER_ONLY))
def test_server_only_content_method_from_a_client_is_503_command_invalid(name: str) -> None:
    with Broker() as broker:
        sock, conn = open_raw(broker.port)
        with sock:
            call(sock, conn, 1, M("channel.open")())
            method = M(name)(**SERVER_ONLY[name])
            properties = SPEC_0_9_1.properties("basic")()
            sock.sendall(conn.send_content(1, method, properties, b"body"))
            close = next_method(sock, conn, 1)
    assert close.NAME == "connection.close"
    assert close.reply_code == 503
    assert close.reply_text == f"COMMAND_INVALID - {name} is not sent by clients"
    assert (close.class_id, close.method_id) == (method.CLASS_ID, method.METHOD_ID)
