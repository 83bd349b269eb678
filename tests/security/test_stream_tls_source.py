"""The source over the stream protocol with TLS (``rabbitmq-stream+tls://``), on the bundled
broker (``[tls] stream_port``) and RabbitMQ 4 (``stream.listeners.ssl``): a stream is read
through it as through plain TCP, the server is verified against ``cacertfile``, and an amqps
``uri`` makes the default ``streamUri`` a TLS one."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import pytest

from amqp_spark.client.stream import StreamClient, StreamEndpoint, default_stream_uri
from amqp_spark.client.stream.connection import StreamConnectionLost
from amqp_spark.source.reader_choice import micro_batch_reader
from amqp_spark.source.stream_queues.stream_queue_micro_batch import (
    StreamProtocolMicroBatchReader,
)
from broker import Broker
from testbed.rabbitmq import TlsFiles
from tests.stream_source.streams import (
    Message,
    read_over_the_stream_protocol,
    source_options,
    stream_of,
)
from tests.support.fixtures import private_rabbitmq_node

from .certs import CertificateAuthority, Issued
from .conftest import tls_settings

MESSAGES = 30


@pytest.fixture(
    scope="module", params=["bundled", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)]
)
def tls_broker_ports(
    request: pytest.FixtureRequest, ca: CertificateAuthority, server_cert: Issued
) -> Iterator[tuple[str, int]]:
    """(AMQP URL, port of the stream protocol over TLS) of a broker serving both."""
    if request.param == "bundled":
        with Broker(config={"tls": tls_settings(ca, server_cert, stream_port=0)}) as b:
            yield b.url, b.stream_tls_port
        return
    files = TlsFiles(server_cert.cert, server_cert.key, ca.cert)
    with private_rabbitmq_node("with TLS", plugins=("rabbitmq_stream",), tls=files) as node:
        yield node.url, node.stream_tls_port


def tls_stream_uri(port: int, ca: CertificateAuthority) -> str:
    return f"rabbitmq-stream+tls://guest:guest@localhost:{port}/%2F?cacertfile={ca.cert}"


def test_a_stream_is_read_over_the_stream_protocol_with_tls(
    tls_broker_ports: tuple[str, int], ca: CertificateAuthority
) -> None:
    url, port = tls_broker_ports
    messages: list[Message] = [(f"secret-{i}".encode(), {}) for i in range(MESSAGES)]
    with stream_of(url, messages) as queue:
        options = source_options(url, tls_stream_uri(port, ca), queue, rowsPerPartition="20")
        assert isinstance(micro_batch_reader(options), StreamProtocolMicroBatchReader)  # auto
        rows = read_over_the_stream_protocol(options)
    assert rows.column("body").to_pylist() == [body for body, _ in messages]


def test_a_stream_server_signed_by_another_ca_is_refused(
    tls_broker_ports: tuple[str, int], other_ca: CertificateAuthority
) -> None:
    _, port = tls_broker_ports
    with pytest.raises(StreamConnectionLost, match="CERTIFICATE_VERIFY_FAILED"):
        StreamClient(StreamEndpoint.parse(tls_stream_uri(port, other_ca)))


def test_an_amqps_uri_makes_the_default_stream_uri_one_over_tls(
    ca: CertificateAuthority,
) -> None:
    amqps = f"amqps://u:p%40ss@broker:5671/vh?cacertfile={ca.cert}&verify=verify_peer&heartbeat=5"
    query = urllib.parse.urlencode({"cacertfile": str(ca.cert), "verify": "verify_peer"})
    assert default_stream_uri(amqps) == f"rabbitmq-stream+tls://u:p%40ss@broker:5551/vh?{query}"
    assert default_stream_uri("amqp://u:p@broker/vh") == "rabbitmq-stream://u:p@broker:5552/vh"
    endpoint = StreamEndpoint.parse(default_stream_uri("amqps://u:p@broker/vh?verify=verify_none"))
    assert (endpoint.port, endpoint.server_hostname, endpoint.tls is not None) == (
        5551,
        "broker",
        True,
    )


def test_tls_parameters_of_a_plain_stream_uri_are_refused() -> None:
    with pytest.raises(ValueError, match=r"need rabbitmq-stream\+tls://"):
        StreamEndpoint.parse("rabbitmq-stream://u:p@broker:5552/vh?cacertfile=/ca.pem")
    with pytest.raises(ValueError, match="heartbeat not taken here"):
        StreamEndpoint.parse("rabbitmq-stream+tls://u:p@broker/vh?heartbeat=5")
