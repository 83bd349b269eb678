"""``amqp-broker streams add_super_stream / delete_super_stream`` make and remove what
``rabbitmq-streams`` makes and removes on RabbitMQ 4: the same commands run on the bundled
broker and on a private RabbitMQ 4 node (management and stream plugins), and the management
APIs of both list the same exchange, queues and bindings with the same arguments."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker import Broker, cli
from tests.support.super_streams import SuperStreamBroker, rabbitmq_streams, super_stream_broker


@pytest.fixture(scope="module")
def rabbitmq() -> Iterator[SuperStreamBroker]:
    with super_stream_broker("rabbitmq") as b:
        yield b


@pytest.fixture
def bundled() -> Iterator[SuperStreamBroker]:
    with Broker() as b:
        yield SuperStreamBroker("bundled", b.url, b.management_url)


def streams(
    broker: SuperStreamBroker, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str]:
    capsys.readouterr()
    status = cli.main(["streams", "--url", broker.management_url, *args])
    out = capsys.readouterr()
    return status, out.out + out.err


COMMANDS = [
    ["add_super_stream", "invoices", "--partitions", "3"],
    ["add_super_stream", "regions", "--routing-keys", "amer,emea,apac"],
    [
        "add_super_stream",
        "kept",
        "--partitions",
        "2",
        "--max-length-bytes",
        "20gb",
        "--max-age",
        "PT10M30S",
        "--stream-max-segment-size-bytes",
        "500mb",
        "--leader-locator",
        "client-local",
        "--initial-cluster-size",
        "1",
    ],
]


@pytest.mark.rabbitmq
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[1])
def test_add_super_stream_makes_what_rabbitmq_4_makes(
    command: list[str],
    rabbitmq: SuperStreamBroker,
    bundled: SuperStreamBroker,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert rabbitmq.node is not None
    theirs = rabbitmq_streams(rabbitmq.node, *command)
    assert theirs.returncode == 0, theirs.stderr
    try:
        status, out = streams(bundled, capsys, *command)
        assert status == 0, out
        assert out.split() == theirs.stdout.split()  # "Adding a super stream..." and so on
        name = command[1]
        assert bundled.layout(name) == rabbitmq.layout(name)
        assert bundled.layout(name)["exchange"]["arguments"] == {"x-super-stream": True}
    finally:
        rabbitmq.delete(command[1])


@pytest.mark.rabbitmq
def test_delete_super_stream_removes_its_exchange_and_partitions_as_rabbitmq_4_does(
    rabbitmq: SuperStreamBroker, bundled: SuperStreamBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rabbitmq.node is not None
    for command in (COMMANDS[1], ["delete_super_stream", "regions"]):
        theirs = rabbitmq_streams(rabbitmq.node, *command)
        assert theirs.returncode == 0, theirs.stderr
        status, out = streams(bundled, capsys, *command)
        assert (status, out.split()) == (0, theirs.stdout.split())
    for broker in (bundled, rabbitmq):
        assert not [q for q in broker.get("/api/queues/%2F") if q["name"].startswith("regions")]
        assert "regions" not in {e["name"] for e in broker.get("/api/exchanges/%2F")}


@pytest.mark.rabbitmq
def test_partitions_and_routing_keys_together_are_refused_as_rabbitmq_4_refuses_them(
    rabbitmq: SuperStreamBroker, bundled: SuperStreamBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rabbitmq.node is not None
    command = ["add_super_stream", "x", "--partitions", "2", "--routing-keys", "a,b"]
    theirs = rabbitmq_streams(rabbitmq.node, *command)
    status, out = streams(bundled, capsys, *command)
    assert (status, theirs.returncode) == (64, 64)
    assert "Specify --partitions or --binding-keys, not both." in out
    assert "Specify --partitions or --binding-keys, not both." in theirs.stdout + theirs.stderr


def test_a_super_stream_that_exists_is_not_made_again(
    bundled: SuperStreamBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert streams(bundled, capsys, *COMMANDS[0])[0] == 0
    status, out = streams(bundled, capsys, "add_super_stream", "invoices", "--partitions", "5")
    assert status == 70 and "there is already an exchange named invoices" in out
    assert len(bundled.layout("invoices")["queues"]) == 3


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-length-bytes", "20 parsecs"], "--max-length-bytes: got '20 parsecs'"),
        (["--max-age", "10 minutes"], "--max-age: got '10 minutes'; accepted: an ISO 8601"),
        (["--partitions", "0"], "--partitions: got 0; accepted: 1 or more"),
        (["--routing-keys", "a,,b"], "--binding-keys: got 'a,,b'"),
    ],
)
def test_a_bad_flag_is_refused_naming_it_and_what_is_accepted(
    flags: list[str],
    message: str,
    bundled: SuperStreamBroker,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out = streams(bundled, capsys, "add_super_stream", "s", *flags)
    assert status == 64 and message in out
    assert "s" not in {e["name"] for e in bundled.get("/api/exchanges/%2F")}
