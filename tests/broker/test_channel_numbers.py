"""Channel numbers as RabbitMQ 4 treats them (measured on 4.0.5; aiormq's own tests
test_bad_channel and test_channel_closed_reuse): any number of 1..65535 opens, whatever
channel-max says (it bounds how many are open at once: tests/security/test_limits.py), a
number closed by the broker opens again, and a number opened twice is a connection error.
A tune-ok with channel-max 0 ("no limit") is over the broker's limit: the socket closes
without a connection.close (RabbitMQ 4.0.5 closes it 3 s later, with a reset; 3.10.8 too)."""

from __future__ import annotations

from urllib.parse import urlsplit

from amqp_protocol import SPEC_0_9_1
from testbed.raw_client import M, call, open_raw
from tests.spec09.peer import Peer


def _port(broker_url: str) -> int:
    port = urlsplit(broker_url).port
    assert port is not None
    return port


def test_a_channel_number_above_channel_max_opens_and_works(broker_url: str) -> None:
    sock, conn = open_raw(_port(broker_url))
    with sock:
        assert call(sock, conn, 65535, M("channel.open")()).NAME == "channel.open-ok"
        reply = call(sock, conn, 65535, M("queue.bind")(queue="no-such-q", exchange="no-such-x"))
        assert reply.NAME == "channel.close" and reply.reply_code == 404


def test_a_channel_number_the_broker_closed_opens_again(broker_url: str) -> None:
    sock, conn = open_raw(_port(broker_url))
    with sock:
        for _ in range(3):
            assert call(sock, conn, 1, M("channel.open")()).NAME == "channel.open-ok"
            declare = M("exchange.declare")(exchange="", passive=True)
            reply = call(sock, conn, 1, declare)
            assert reply.NAME == "channel.close" and reply.reply_code == 403
            sock.sendall(conn.send_method(1, M("channel.close-ok")()))


def test_opening_an_open_channel_again_is_connection_error_504(broker_url: str) -> None:
    sock, conn = open_raw(_port(broker_url))
    with sock:
        assert call(sock, conn, 1, M("channel.open")()).NAME == "channel.open-ok"
        reply = call(sock, conn, 1, M("channel.open")())
        assert reply.NAME == "connection.close" and reply.reply_code == 504
        assert reply.reply_text == "CHANNEL_ERROR - second 'channel.open' seen"


def test_a_tune_ok_with_channel_max_0_closes_the_socket_without_a_close_method(
    broker_url: str,
) -> None:
    peer = Peer(broker_url, SPEC_0_9_1, handshake=False)
    tune = peer.login("guest", "guest")
    assert tune.channel_max == 2047
    peer.tune(0, tune.frame_max)
    peer.send(0, "connection.open", virtual_host="/")
    assert peer.socket_closed_silently(timeout=10)
