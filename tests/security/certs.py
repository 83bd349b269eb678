"""Test certificates made with the openssl CLI at test time (no private key is committed):
a CA, a server certificate for 127.0.0.1 / localhost, and client certificates by name."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

_DAYS = "2"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


class CertificateAuthority:
    """A self-signed CA in ``folder`` that issues server and client certificates."""

    def __init__(self, folder: Path, name: str = "amqp-spark test CA") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.cert = folder / "ca.pem"
        self.key = folder / "ca.key"
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", _DAYS,
            "-subj", f"/CN={name}", "-keyout", str(self.key), "-out", str(self.cert),
        )  # fmt: skip

    def issue(self, common_name: str, *, server: bool = False) -> Issued:
        stem = self.folder / ("server" if server else f"client-{common_name}")
        key, csr, cert, ext = (stem.with_suffix(s) for s in (".key", ".csr", ".pem", ".ext"))
        usage = "serverAuth" if server else "clientAuth"
        san = "subjectAltName = IP:127.0.0.1, DNS:localhost\n" if server else ""
        ext.write_text(f"extendedKeyUsage = {usage}\n{san}")
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={common_name}",
            "-keyout", str(key), "-out", str(csr),
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(self.cert), "-CAkey", str(self.key),
            "-CAcreateserial", "-days", _DAYS, "-extfile", str(ext), "-out", str(cert),
        )  # fmt: skip
        return Issued(cert, key)
