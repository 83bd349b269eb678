"""The amqps listener: pika and the connector connect with and without client certificates,
EXTERNAL logs a certificate's user in, and an untrusted CA is refused either way."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pika
import pytest
from pika.credentials import ExternalCredentials
from pika.exceptions import AMQPConnectionError as PikaConnectionError

from amqp_spark.client import AMQPConnectionError, ConnectionClosed, connect
from broker import Broker
from testbed.broker_process import BrokerProcess
from testbed.ports import free_port

from .certs import CertificateAuthority, Issued
from .conftest import tls_settings

#: What pika raises when a TLS handshake fails (it passes some ssl errors through as they are).
PIKA_TLS_FAILURES = (PikaConnectionError, ssl.SSLError, ConnectionError)


def _pika_params(
    broker: Broker, ca_file: Path, client: Issued | None = None, **kwargs: object
) -> pika.ConnectionParameters:
    context = ssl.create_default_context(cafile=str(ca_file))
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return pika.ConnectionParameters(
        host="127.0.0.1",
        port=broker.tls_port,
        ssl_options=pika.SSLOptions(context, "localhost"),
        connection_attempts=1,
        socket_timeout=5,
        **kwargs,
    )


def _round_trip_pika(params: pika.ConnectionParameters) -> bytes | None:
    conn = pika.BlockingConnection(params)
    try:
        ch = conn.channel()
        q = ch.queue_declare("", exclusive=True).method.queue
        ch.basic_publish("", q, b"over tls")
        return ch.basic_get(q, auto_ack=True)[2]
    finally:
        conn.close()


def _connector_url(port: int, ca: CertificateAuthority, client: Issued | None = None) -> str:
    url = f"amqps://guest:guest@localhost:{port}/?cacertfile={ca.cert}"
    if client is not None:
        url += f"&certfile={client.cert}&keyfile={client.key}"
    return url


def _round_trip_connector(url: str) -> bytes:
    with connect(url) as conn, conn.channel() as ch:
        q = ch.queue_declare("", exclusive=True).queue
        ch.basic_publish("", q, b"over tls")
        delivery = ch.basic_get(q, no_ack=True)
        assert delivery is not None
        return delivery.body


def test_pika_connects_without_a_client_certificate(
    tls_broker: Broker, ca: CertificateAuthority
) -> None:
    assert _round_trip_pika(_pika_params(tls_broker, ca.cert)) == b"over tls"


def test_pika_connects_with_a_client_certificate(
    tls_broker: Broker, ca: CertificateAuthority, client_cert: Issued
) -> None:
    assert _round_trip_pika(_pika_params(tls_broker, ca.cert, client_cert)) == b"over tls"


def test_external_logs_in_the_certificates_common_name(
    tls_broker: Broker, ca: CertificateAuthority, client_cert: Issued
) -> None:
    params = _pika_params(tls_broker, ca.cert, client_cert, credentials=ExternalCredentials())
    assert _round_trip_pika(params) == b"over tls"


def test_connector_logs_in_with_external_and_its_client_certificate(
    tls_broker: Broker, ca: CertificateAuthority, client_cert: Issued
) -> None:
    url = _connector_url(tls_broker.tls_port, ca, client_cert).replace("guest:guest@", "")
    assert _round_trip_connector(url + "&auth_mechanism=external") == b"over tls"


def test_connector_with_external_but_no_client_certificate_is_refused(
    tls_broker: Broker, ca: CertificateAuthority
) -> None:
    with pytest.raises(ConnectionClosed):
        _round_trip_connector(_connector_url(tls_broker.tls_port, ca) + "&auth_mechanism=external")


def test_external_without_a_client_certificate_is_refused(
    tls_broker: Broker, ca: CertificateAuthority
) -> None:
    params = _pika_params(tls_broker, ca.cert, credentials=ExternalCredentials())
    with pytest.raises(PikaConnectionError):
        pika.BlockingConnection(params)


def test_connector_connects_and_verifies_the_server(
    tls_broker: Broker, ca: CertificateAuthority
) -> None:
    assert _round_trip_connector(_connector_url(tls_broker.tls_port, ca)) == b"over tls"


def test_connector_connects_with_a_client_certificate(
    tls_broker: Broker, ca: CertificateAuthority, client_cert: Issued
) -> None:
    assert (
        _round_trip_connector(_connector_url(tls_broker.tls_port, ca, client_cert)) == b"over tls"
    )


def test_connector_refuses_a_server_signed_by_another_ca(
    tls_broker: Broker, other_ca: CertificateAuthority
) -> None:
    with pytest.raises(AMQPConnectionError):
        _round_trip_connector(_connector_url(tls_broker.tls_port, other_ca))


def test_connector_with_verification_turned_off_connects_to_an_unknown_server(
    tls_broker: Broker,
) -> None:
    url = f"amqps://guest:guest@127.0.0.1:{tls_broker.tls_port}/?verify=verify_none"
    assert _round_trip_connector(url) == b"over tls"


def test_pika_refuses_a_server_signed_by_another_ca(
    tls_broker: Broker, other_ca: CertificateAuthority
) -> None:
    with pytest.raises(PIKA_TLS_FAILURES):
        pika.BlockingConnection(_pika_params(tls_broker, other_ca.cert))


def test_broker_refuses_a_client_certificate_from_another_ca(
    tls_broker: Broker, ca: CertificateAuthority, other_ca: CertificateAuthority
) -> None:
    stranger = other_ca.issue("guest")
    with pytest.raises(PIKA_TLS_FAILURES):
        _round_trip_pika(_pika_params(tls_broker, ca.cert, stranger))


def test_a_required_client_certificate_refuses_clients_without_one(
    ca: CertificateAuthority, server_cert: Issued, client_cert: Issued
) -> None:
    config = {"tls": tls_settings(ca, server_cert, fail_if_no_peer_cert=True)}
    with Broker(config=config) as b:
        with pytest.raises(AMQPConnectionError):
            _round_trip_connector(_connector_url(b.tls_port, ca))
        assert _round_trip_connector(_connector_url(b.tls_port, ca, client_cert)) == b"over tls"


def test_plain_amqp_listener_keeps_serving_beside_tls(tls_broker: Broker) -> None:
    assert _round_trip_connector(tls_broker.url) == b"over tls"


def _toml_table(name: str, settings: dict[str, object]) -> str:
    """A TOML table of string, integer and boolean values (JSON's string escapes are TOML's)."""
    lines = [f"[{name}]"]
    for key, value in settings.items():
        text = str(value).lower() if isinstance(value, bool) else json.dumps(value)
        lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"


def test_the_cli_serves_amqps_from_the_configs_tls_section(
    tmp_path: Path, ca: CertificateAuthority, server_cert: Issued, client_cert: Issued
) -> None:
    tls_port = free_port()
    config = tmp_path / "broker.toml"
    config.write_text(_toml_table("tls", tls_settings(ca, server_cert, port=tls_port)))
    with BrokerProcess(tmp_path / "data", "--config", str(config)):
        assert _round_trip_connector(_connector_url(tls_port, ca)) == b"over tls"
        assert _round_trip_connector(_connector_url(tls_port, ca, client_cert)) == b"over tls"
