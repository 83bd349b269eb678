"""Several addresses, without a cluster: parsing the option, the rotation of a process, one
connection attempt trying every address, the backoff between attempts (a fake clock), and
the sink and a stream read failing over between two proxies of the bundled broker (each
proxy a "node": closing it is the node dying)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_9_1
from amqp_spark.client import connect
from amqp_spark.client.addresses import Address, Rotation, parse_addresses, rotation_for
from amqp_spark.client.exceptions import NoNodeAnswered
from amqp_spark.client.parameters import parse_url, parse_url_hosts
from amqp_spark.options import OptionError
from amqp_spark.sink.messages import ExchangeRun
from amqp_spark.sink.publisher import PartitionPublisher
from amqp_spark.sink.settings import SinkSettings
from amqp_spark.source.connecting import BrokerUnavailable, open_with_retry
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import StreamRangePartition
from amqp_spark.source.stream_queues.ranges import ROWS_PER_RECORD_BATCH, read_range
from testbed.ports import free_port
from tests.cluster.conftest import addresses_of, bundled_queue, port_of
from tests.spark.recording_proxy import RecordingProxy

BasicProperties = SPEC_0_9_1.properties("basic")


def test_addresses_keep_their_order_and_take_the_default_port() -> None:
    assert parse_addresses(" n1:5673, n2 ,[::1]:5674,n1:5673", 5672) == (
        Address("n1", 5673),
        Address("n2", 5672),
        Address("::1", 5674),
    )


def test_the_url_the_source_connects_with_names_every_address_and_keeps_the_rest() -> None:
    options = SourceOptions.parse(
        {
            "uri": "amqp://u:p%40ss@ignored:5999/v?heartbeat=7",
            "addresses": "n1:5672,n2",
            "queue": "q",
        }
    )

    targets = parse_url_hosts(options.uri)

    assert [(t.host, t.port) for t in targets] == [("n1", 5672), ("n2", 5999)]
    assert {(t.username, t.password, t.virtual_host, t.heartbeat) for t in targets} == {
        ("u", "p@ss", "v", 7)
    }


def test_each_tls_address_is_verified_under_its_own_name_unless_one_is_given() -> None:
    own = parse_url_hosts("amqps://u@n1:5671,n2:5671/v")
    named = parse_url_hosts("amqps://u@n1:5671,n2:5671/v?server_name_indication=rabbit")

    assert [t.server_hostname for t in own] == ["n1", "n2"]
    assert [t.server_hostname for t in named] == ["rabbit", "rabbit"]


@pytest.mark.parametrize(
    ("addresses", "why"),
    [
        ("n1:99999", "'n1:99999': the port '99999' is not in 1-65535"),
        ("n1:x", "'n1:x': the port 'x' is not in 1-65535"),
        ("n1,,n2", "an empty item in 'n1,,n2'"),
        (" ", "no address given"),
        ("n1/v:5672", "'n1/v:5672' is not host:port"),
    ],
)
@pytest.mark.parametrize(
    ("parse", "needed"), [(SourceOptions.parse, {"queue": "q"}), (SinkSettings.parse, {})]
)
def test_a_bad_address_list_is_refused_naming_the_value_and_what_is_accepted(
    parse: Callable[[dict[str, str]], object], needed: dict[str, str], addresses: str, why: str
) -> None:
    with pytest.raises(OptionError) as caught:
        parse({"uri": "amqp://h", "addresses": addresses, **needed})

    message = str(caught.value)
    assert caught.value.option == "addresses"
    assert f"got {addresses!r}" in message
    assert "accepted: comma-separated host:port pairs" in message
    assert why in message


def test_the_rotation_keeps_the_node_that_answered_and_moves_on_when_it_is_lost() -> None:
    a, b, c = Address("a", 1), Address("b", 1), Address("c", 1)
    rotation = Rotation((a, b, c))
    assert rotation.order() == [a, b, c]

    rotation.answered(b)
    assert rotation.order() == [b, c, a]
    rotation.lost(a)  # an old connection to a node already left: no change
    assert rotation.order() == [b, c, a]
    rotation.lost(b)
    assert rotation.order() == [c, a, b]


def refusing_port() -> int:
    """A port of 127.0.0.1 nothing listens on: connecting is refused at once."""
    return free_port()


def url_with(url: str, addresses: str) -> str:
    return SinkSettings.parse({"uri": url, "addresses": addresses}).uri


def test_a_connection_goes_to_the_first_address_that_answers(
    node_proxies: tuple[RecordingProxy, RecordingProxy],
) -> None:
    first, second = node_proxies
    dead = refusing_port()
    url = url_with(first.url, addresses_of(dead, port_of(second), port_of(first)))

    with connect(url) as conn:
        assert conn.params.port == port_of(second)
    rotation = rotation_for(target.address for target in parse_url_hosts(url))
    assert rotation.order()[0] == Address("127.0.0.1", port_of(second))


def test_a_lost_connection_sends_the_next_one_to_the_next_node(
    node_proxies: tuple[RecordingProxy, RecordingProxy],
) -> None:
    first, second = node_proxies
    url = url_with(first.url, addresses_of(port_of(first), port_of(second)))
    conn = connect(url)
    assert conn.params.port == port_of(first)

    first.cut()  # the node's connections die; it would still accept new ones
    deadline = time.monotonic() + 10
    while conn.is_open and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not conn.is_open, "the client did not notice the cut"

    with connect(url) as again:
        assert again.params.port == port_of(second)


def test_no_node_answering_names_every_address_and_why() -> None:
    ports = [refusing_port(), refusing_port()]

    with pytest.raises(NoNodeAnswered) as caught:
        connect(f"amqp://guest:guest@{addresses_of(*ports)}/")

    message = str(caught.value)
    assert "no node answered (2 tried)" in message
    for port in ports:
        assert f"127.0.0.1:{port}: cannot connect to amqp://guest@127.0.0.1:{port}/" in message
    assert message.count("refused") == 2


class ClosingNode:
    """A port that accepts TCP connections and closes them at once, counting them: a
    "node" whose AMQP handshake always fails."""

    def __init__(self) -> None:
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", free_port()))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            client.close()

    def close(self) -> None:
        self._listener.close()


def test_each_attempt_tries_every_address_with_a_doubling_pause_between_attempts() -> None:
    nodes = [ClosingNode(), ClosingNode()]
    slept: list[float] = []
    url = f"amqp://guest:guest@{addresses_of(*(n.port for n in nodes))}/"
    try:
        with pytest.raises(BrokerUnavailable) as caught:
            open_with_retry(url, 5, "test", lambda conn: None, sleep=slept.append)
    finally:
        for node in nodes:
            node.close()

    assert slept == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert [n.accepted for n in nodes] == [6, 6]
    message = str(caught.value)
    assert "after 6 attempt(s)" in message
    assert all(f"127.0.0.1:{n.port}: " in message for n in nodes)


def test_the_sink_publishes_what_was_not_confirmed_again_on_the_next_node(
    node_proxies: tuple[RecordingProxy, RecordingProxy], bundled_broker_url: str
) -> None:
    first, second = node_proxies
    with bundled_queue(bundled_broker_url) as (ch, queue):
        settings = SinkSettings.parse(
            {"uri": first.url, "addresses": addresses_of(port_of(first), port_of(second))}
        )
        publisher = PartitionPublisher(settings, "partition 0 of the test")
        ids = [str(i) for i in range(6000)]

        def run(chunk: list[str]) -> list[ExchangeRun]:
            return [ExchangeRun("", [(queue, b"x", BasicProperties(message_id=i)) for i in chunk])]

        publisher.publish(run(ids[:3000]))
        first.close()  # the node dies: its connections end, it refuses new ones
        publisher.publish(run(ids[3000:]))
        assert publisher.finish() == 6000

        got = set()
        while (d := ch.basic_get(queue, no_ack=True)) is not None:
            got.add(d.properties.fields()["message_id"])
    assert got == set(ids)
    assert second.methods_sent(), "nothing was published through the second node"


def test_a_stream_range_read_goes_on_from_its_last_row_on_the_next_node(
    node_proxies: tuple[RecordingProxy, RecordingProxy], bundled_broker_url: str
) -> None:
    first, second = node_proxies
    count = ROWS_PER_RECORD_BATCH + 5000
    sent = [str(i).encode() for i in range(count)]
    with bundled_queue(bundled_broker_url, {"x-queue-type": "stream"}, sent) as (_, queue):
        part = StreamRangePartition(
            uri=url_with(first.url, addresses_of(port_of(first), port_of(second))),
            queue=queue,
            start=0,
            end=count,
            prefetch=1000,
            poll_timeout=2.0,
            max_reconnect_attempts=3,
        )
        rows: list[tuple[int, bytes]] = []
        for batch in read_range(part):
            offsets, bodies = batch.column("offset").to_pylist(), batch.column("body").to_pylist()
            rows += zip(offsets, bodies, strict=True)
            first.close()  # after the first batch: the node dies mid-read

    assert rows == list(enumerate(sent))
    assert second.methods_sent(), "the read did not go on through the second node"


def test_the_parameters_of_a_url_naming_several_hosts_are_its_first_hosts() -> None:
    """What code that needs the user, password or vhost of the ``uri`` (the management API's
    credentials, say) reads from a URL carrying ``addresses``."""
    first = parse_url("amqp://u:p@n1:5673,n2:5674/v")

    assert (first.host, first.port, first.username, first.password, first.virtual_host) == (
        "n1",
        5673,
        "u",
        "p",
        "v",
    )
