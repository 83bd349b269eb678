"""Rule connection.start-ok.mechanism:security: the client authenticates with the
highest-level security profile it can handle from the server's list (``sasl``'s ranking:
EXTERNAL with a client certificate over TLS, above PLAIN and AMQPLAIN)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amqp_protocol import SPEC_0_9
from amqp_spark.client import AMQPConnectionError, connect
from amqp_spark.client.sasl import choose_mechanism
from broker import Broker
from tests.security.certs import CertificateAuthority, Issued

RULE = "connection.start-ok.mechanism:security"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, Issued, Issued]:
    ca = CertificateAuthority(tmp_path_factory.mktemp("sasl-pki"))
    return ca, ca.issue("localhost", server=True), ca.issue("guest")


@pytest.fixture(scope="module")
def tls_broker(pki: tuple[CertificateAuthority, Issued, Issued]) -> Iterator[Broker]:
    """Offers EXTERNAL, PLAIN and AMQPLAIN to a client whose certificate it verified."""
    ca, server, _ = pki
    tls = {
        "port": 0,
        "certfile": str(server.cert),
        "keyfile": str(server.key),
        "cacertfile": str(ca.cert),
        "verify": "verify_peer",
    }
    with Broker(config={"tls": tls}) as broker:
        yield broker


def _url(broker: Broker, ca: Path, credentials: str, client: Issued | None) -> str:
    url = f"amqps://{credentials}@localhost:{broker.tls_port}/?cacertfile={ca}"
    if client is not None:
        url += f"&certfile={client.cert}&keyfile={client.key}"
    return url


@pytest.mark.spec_rule(RULE)
@pytest.mark.parametrize(
    ("offered", "ours", "chosen"),
    [
        ("PLAIN AMQPLAIN EXTERNAL", ("EXTERNAL", "PLAIN", "AMQPLAIN"), "EXTERNAL"),
        ("AMQPLAIN PLAIN EXTERNAL", ("PLAIN", "AMQPLAIN", "EXTERNAL"), "EXTERNAL"),
        ("AMQPLAIN PLAIN", ("EXTERNAL", "PLAIN", "AMQPLAIN"), "PLAIN"),
        ("EXTERNAL AMQPLAIN", ("PLAIN", "AMQPLAIN"), "AMQPLAIN"),
        ("CRAM-MD5", ("PLAIN", "AMQPLAIN"), None),
    ],
)
def test_the_highest_ranked_common_mechanism_wins_whatever_the_servers_order(
    offered: str, ours: tuple[str, ...], chosen: str | None
) -> None:
    assert choose_mechanism(offered.encode(), ours) == chosen


@pytest.mark.spec_rule(RULE)
def test_with_a_client_certificate_the_client_logs_in_with_external(
    tls_broker: Broker, pki: tuple[CertificateAuthority, Issued, Issued]
) -> None:
    """The password is wrong: only EXTERNAL (the certificate names ``guest``) can log in."""
    ca, _, client = pki
    url = _url(tls_broker, ca.cert, "guest:not-the-password", client)
    with connect(url, spec=SPEC_0_9) as conn, conn.channel() as ch:
        assert ch.queue_declare("", exclusive=True).queue


@pytest.mark.spec_rule(RULE)
def test_without_a_client_certificate_the_client_falls_back_to_its_password(
    tls_broker: Broker, pki: tuple[CertificateAuthority, Issued, Issued]
) -> None:
    ca, _, _ = pki
    with connect(_url(tls_broker, ca.cert, "guest:guest", None), spec=SPEC_0_9) as conn:
        assert conn.is_open
    with pytest.raises(AMQPConnectionError):
        connect(_url(tls_broker, ca.cert, "guest:not-the-password", None), spec=SPEC_0_9)
