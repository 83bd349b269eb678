"""Rules of the 0-9 connection class: version and mechanism refusals, tuning limits,
virtual-host separation, redirect and insist, the close handshake, and frame types 4-7."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_9, SPEC_0_9_1, Spec, frames
from amqp_spark.client import AMQPConnectionError, ChannelClosed, connect
from broker import Broker

from .dialects import in_both_dialects
from .peer import Peer

rule = pytest.mark.spec_rule


def _url(broker: Broker, vhost: str = "%2F", user: str = "guest") -> str:
    return f"amqp://{user}:{user}@127.0.0.1:{broker.port}/{vhost}"


@in_both_dialects("connection.start:client-support", draft=("connection.start:client-support",))
def test_the_client_closes_the_socket_when_the_server_offers_another_version(spec: Spec) -> None:
    """A server that answers our 0-9 (0-10) header with 0-9-1's: the client gives up and
    closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            seen.append(conn.recv(8))
            conn.sendall(SPEC_0_9_1.protocol_header)
            seen.append(conn.recv(64))  # b"" once the client closed its socket

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    port = listener.getsockname()[1]
    with pytest.raises(AMQPConnectionError):
        connect(f"amqp://guest:guest@127.0.0.1:{port}/", spec=spec)
    server.join(timeout=10)
    listener.close()
    assert seen == [spec.protocol_header, b""]


@in_both_dialects(
    "connection.start-ok.mechanism:validity", draft=("connection.start-ok.mechanism:validity",)
)
def test_a_mechanism_the_server_did_not_offer_closes_the_socket_without_a_reply(
    bundled_broker_url: str, spec: Spec
) -> None:
    peer = Peer(bundled_broker_url, spec, handshake=False)
    peer.send(
        0,
        "connection.start-ok",
        client_properties={},
        mechanism="NOT-OFFERED",
        response=b"\0guest\0guest",
        locale="en_US",
    )
    assert peer.socket_closed_silently()


_FRAME_MAX_MINIMUM = ("connection.tune.frame-max:minimum", "connection.tune-ok.frame-max:minimum")


@in_both_dialects(*_FRAME_MAX_MINIMUM, draft=_FRAME_MAX_MINIMUM)
def test_frames_up_to_frame_min_size_are_accepted_before_tuning(
    bundled_broker_url: str, spec: Spec
) -> None:
    """A start-ok frame of nearly 4096 octets, before frame-max is negotiated."""
    peer = Peer(bundled_broker_url, spec, handshake=False)
    padding = {"padding": "x" * 3990}
    start_ok = spec.method("connection.start-ok")(
        client_properties=padding, mechanism="PLAIN", response=b"\0guest\0guest", locale="en_US"
    )
    assert frames.FRAME_MIN_SIZE - 100 < len(start_ok.encode()) <= frames.FRAME_MIN_SIZE - 8
    tune = peer.login("guest", "guest", client_properties=padding)
    assert tune.frame_max >= frames.FRAME_MIN_SIZE
    peer.close()


@in_both_dialects(
    "connection.tune-ok.frame-max:minimum", draft=("connection.tune-ok.frame-max:minimum",)
)
def test_a_frame_max_under_frame_min_size_closes_the_socket(
    bundled_broker_url: str, spec: Spec
) -> None:
    peer = Peer(bundled_broker_url, spec, handshake=False)
    tune = peer.login("guest", "guest")
    peer.tune(tune.channel_max, frames.FRAME_MIN_SIZE - 1)
    assert peer.socket_closed_silently()


_UPPER_LIMITS = (
    "connection.tune-ok.channel-max:upper-limit",
    "connection.tune-ok.frame-max:upper-limit",
)


@in_both_dialects(*_UPPER_LIMITS, draft=_UPPER_LIMITS)
@pytest.mark.parametrize("over", ["channel_max", "frame_max"])
def test_tuning_over_the_servers_limits_closes_the_socket_without_a_close_method(
    bundled_broker_url: str, over: str, spec: Spec
) -> None:
    peer = Peer(bundled_broker_url, spec, handshake=False)
    tune = peer.login("guest", "guest")
    limits = {"channel_max": tune.channel_max, "frame_max": tune.frame_max}
    limits[over] += 1
    peer.tune(**limits)
    assert peer.socket_closed_silently()


@rule("connection.open.virtual-host:separation")
def test_virtual_hosts_share_no_exchange_queue_or_message(
    broker_with: Callable[..., Broker],
) -> None:
    broker = broker_with(
        vhosts=["/", "other"], users={"guest": {"password": "guest", "vhosts": ["/", "other"]}}
    )
    with (
        connect(_url(broker), spec=SPEC_0_9) as home,
        connect(_url(broker, "other"), spec=SPEC_0_9) as other,
    ):
        here, there = home.channel(), other.channel()
        here.exchange_declare("only-home", "fanout")
        here.queue_declare("same-name")
        there.queue_declare("same-name")
        here.basic_publish("", "same-name", b"home")
        assert there.basic_get("same-name", no_ack=True) is None
        got = here.basic_get("same-name", no_ack=True)
        assert got is not None and got.body == b"home"
        with pytest.raises(ChannelClosed) as info:
            there.exchange_declare("only-home", "fanout", passive=True)
        assert info.value.reply_code == 404


@rule("connection.open.virtual-host:security")
def test_a_user_without_permissions_on_a_virtual_host_cannot_open_it(
    broker_with: Callable[..., Broker],
) -> None:
    broker = broker_with(
        vhosts=["/", "other"], users={"guest": {"password": "guest", "vhosts": ["/"]}}
    )
    peer = Peer(broker.url, handshake=False)
    tune = peer.login("guest", "guest")
    peer.tune(tune.channel_max, tune.frame_max)
    peer.send(0, "connection.open", virtual_host="other")
    assert peer.connection_error() == 530


@in_both_dialects("connection.open.insist:behaviour", draft=("connection.open.insist:behaviour",))
def test_a_configured_redirect_is_sent_unless_the_client_insists(
    broker_with: Callable[..., Broker], spec: Spec
) -> None:
    broker = broker_with(redirect={"/": ["127.0.0.2:5673", "127.0.0.3"]})
    redirected = Peer(broker.url, spec, handshake=False)
    redirected.tune(*_limits(redirected.login("guest", "guest")))
    reply = redirected.open("/")
    assert (reply.NAME, reply.host, reply.known_hosts) == (
        "connection.redirect",
        "127.0.0.2:5673",
        "127.0.0.2:5673 127.0.0.3",
    )
    assert redirected.socket_closed_silently()
    insisting = Peer(broker.url, spec, handshake=False)
    insisting.tune(*_limits(insisting.login("guest", "guest")))
    Peer.expect_reply(insisting.open("/", insist=True), "connection.open-ok")
    insisting.close()


def test_a_0_9_1_client_is_never_redirected(broker_with: Callable[..., Broker]) -> None:
    """0-9-1 has no connection.redirect: the redirect setting applies to 0-9/0-8 only."""
    broker = broker_with(redirect={"/": ["127.0.0.2:5673"]})
    with connect(broker.url) as conn:
        assert conn.channel().queue_declare("").queue


def _limits(tune: object) -> tuple[int, int]:
    return tune.channel_max, tune.frame_max  # type: ignore[attr-defined]


@in_both_dialects("connection.close:stability", draft=("connection.close:stability",))
def test_after_the_servers_close_only_close_ok_is_answered(
    bundled_broker_url: str, spec: Spec
) -> None:
    peer = Peer(bundled_broker_url, spec)
    peer.open_channel(1)
    peer.open_channel(2)
    peer.send(1, "channel.open")  # a connection error: the server sends connection.close
    assert peer.connection_error() == 504
    peer.send(2, "queue.declare", queue="")
    peer.nothing(2, "queue.declare-ok")
    peer.send(0, "connection.close-ok")
    assert peer.socket_closed_silently()


def _frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", frame_type, channel, len(payload)) + payload + b"\xce"


@pytest.mark.parametrize("frame_type", [frames.OOB_METHOD, frames.OOB_HEADER, frames.OOB_BODY])
def test_an_out_of_band_frame_is_an_unexpected_frame(peer: Peer, frame_type: int) -> None:
    """No channel has out-of-band transfers configured (channel.open's out-of-band field
    has no defined syntax in 0-9), so an oob frame is a 505 connection exception."""
    peer.sock.sendall(_frame(frame_type, 1, b"\x00\x3c\x00\x28"))
    assert peer.connection_error() == 505


def test_a_trace_frame_is_ignored(peer: Peer) -> None:
    peer.sock.sendall(_frame(frames.TRACE, 1, b"diagnostics"))
    assert peer.call(1, "queue.declare", queue="").queue.startswith("amq.gen-")


@rule("connection.start.server-properties:required-fields")
def test_the_server_describes_itself_in_server_properties(bundled_broker_url: str) -> None:
    peer = Peer(bundled_broker_url)
    try:
        for field in ("host", "product", "version", "platform", "copyright", "information"):
            assert peer.server_properties.get(field), field
    finally:
        peer.close()


@rule("connection.redirect:usage")
def test_the_client_follows_a_redirect_to_the_host_it_names(
    broker_with: Callable[..., Broker],
) -> None:
    target = broker_with()
    redirecting = broker_with(redirect={"/": [f"127.0.0.1:{target.port}"]})
    with connect(redirecting.url, spec=SPEC_0_9) as conn:
        assert conn.params.port == target.port
        queue = conn.channel().queue_declare("redirected-here").queue
    with connect(target.url, spec=SPEC_0_9) as conn:  # the queue is on the target
        assert conn.channel().queue_declare(queue, passive=True).queue == queue


@rule("connection.start-ok.client-properties:required-fields")
def test_the_client_announces_product_version_platform_and_information(
    broker_with: Callable[..., Broker],
) -> None:
    broker = broker_with()
    with connect(broker.url, spec=SPEC_0_9):
        server = broker.server
        (received,) = [c.client_properties for c in server.connections]  # what start-ok carried
    assert {"product", "version", "platform", "information"} <= set(received)
    assert all(isinstance(received[k], str) and received[k] for k in ("product", "version"))


def _close_of(peer: Peer) -> tuple[int, str, int, int]:
    close = peer.expect(0, "connection.close").method
    return close.reply_code, close.reply_text, close.class_id, close.method_id


@pytest.mark.parametrize(("logged_in", "state"), [(False, "start"), (True, "tune")])
def test_a_connection_method_out_of_order_is_503_naming_it_and_the_state(
    bundled_broker_url: str, logged_in: bool, state: str
) -> None:
    """The handshake's order (amqp_protocol.handshake): connection.open before start-ok, and
    before tune-ok."""
    peer = Peer(bundled_broker_url, handshake=False)
    if logged_in:
        peer.login("guest", "guest")
    peer.send(0, "connection.open", virtual_host="/")
    text = f"COMMAND_INVALID - unexpected connection.open in state {state}"
    assert _close_of(peer) == (503, text, 10, 40)


def test_a_channel_method_before_connection_open_is_504(bundled_broker_url: str) -> None:
    peer = Peer(bundled_broker_url, handshake=False)
    tune = peer.login("guest", "guest")
    peer.tune(tune.channel_max, tune.frame_max)
    peer.send(1, "channel.open")
    assert _close_of(peer) == (504, "CHANNEL_ERROR - expected 'connection.open'", 20, 10)


def test_a_tune_ok_out_of_order_closes_the_socket_as_a_refused_one_does(
    bundled_broker_url: str,
) -> None:
    peer = Peer(bundled_broker_url, handshake=False)
    peer.tune(0, 131072)  # before start-ok
    assert peer.socket_closed_silently()
