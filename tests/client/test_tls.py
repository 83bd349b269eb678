"""amqps:// end to end: a TLS-terminating relay with a throw-away certificate in front of the
broker under test (neither broker listens on TLS here)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from amqp_spark.client import AMQPConnectionError, connect

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is needed to make a cert"),
]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (cert, key)."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.close()
        source.close()


@pytest.fixture
def tls_port(broker_url: str, certificate: tuple[Path, Path]) -> Iterator[int]:
    """A port that speaks TLS and relays the plaintext to the broker."""
    target = urlsplit(broker_url)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                raw, _ = listener.accept()
                try:
                    client = context.wrap_socket(raw, server_side=True)
                except (ssl.SSLError, OSError):
                    raw.close()
                    continue
                upstream = socket.create_connection((target.hostname, target.port or 5672))
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def test_amqps_with_cacertfile_verifies_and_works(
    tls_port: int, certificate: tuple[Path, Path]
) -> None:
    url = f"amqps://guest:guest@127.0.0.1:{tls_port}/?cacertfile={certificate[0]}"
    with connect(url) as conn, conn.channel() as ch:
        queue = ch.queue_declare("", exclusive=True).queue
        ch.confirm_select()
        ch.basic_publish_batch("", [(queue, b"%d" % i, None) for i in range(1000)])
        ch.wait_for_confirms()
        ch.basic_consume(queue, no_ack=True)
        bodies: list[bytes] = []
        while len(bodies) < 1000:
            d = ch.next_delivery(timeout=5)
            assert d is not None
            bodies.append(d.body)
        assert bodies == [b"%d" % i for i in range(1000)]


def test_amqps_refuses_an_untrusted_server_certificate(tls_port: int) -> None:
    with pytest.raises(AMQPConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        connect(f"amqps://guest:guest@127.0.0.1:{tls_port}/?connection_timeout=5000")


def test_amqps_verify_none_accepts_it(tls_port: int) -> None:
    with connect(f"amqps://guest:guest@127.0.0.1:{tls_port}/?verify=verify_none") as conn:
        assert conn.channel().is_open
