"""Fixtures of the security tests: test certificates and brokers configured for them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import Broker

from .certs import CertificateAuthority, Issued


@pytest.fixture(scope="session")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    """A CA the broker does not trust, and that does not trust the broker."""
    return CertificateAuthority(tmp_path_factory.mktemp("other-pki"), "untrusted CA")


@pytest.fixture(scope="session")
def server_cert(ca: CertificateAuthority) -> Issued:
    return ca.issue("localhost", server=True)


@pytest.fixture(scope="session")
def client_cert(ca: CertificateAuthority) -> Issued:
    """A client certificate whose common name is the user ``guest``."""
    return ca.issue("guest")


def tls_settings(ca: CertificateAuthority, server_cert: Issued, **extra: object) -> dict:
    return {
        "port": 0,
        "certfile": str(server_cert.cert),
        "keyfile": str(server_cert.key),
        "cacertfile": str(ca.cert),
        "verify": "verify_peer",
        **extra,
    }


@pytest.fixture(scope="session")
def tls_broker(ca: CertificateAuthority, server_cert: Issued) -> Iterator[Broker]:
    """amqp and amqps; client certificates verified when presented, not required."""
    with Broker(config={"tls": tls_settings(ca, server_cert)}) as b:
        yield b


def cert_paths(issued: Issued) -> tuple[Path, Path]:
    return issued.cert, issued.key
