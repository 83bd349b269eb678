"""Password hashing (RabbitMQ's ``rabbit_password_hashing_sha256``) and SASL responses.

EXTERNAL (RabbitMQ's ``rabbitmq_auth_mechanism_ssl``) takes the user name from the common
name of the client certificate the TLS handshake verified; it is offered only then.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from amqp_protocol import values

MECHANISMS = ("PLAIN", "AMQPLAIN")
EXTERNAL = "EXTERNAL"


def hash_password(password: str, salt: bytes | None = None) -> str:
    """base64(salt + sha256(salt + password)) with a 4-byte random salt, as RabbitMQ stores it."""
    salt = os.urandom(4) if salt is None else salt
    return base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()


def check_password(password: str, stored_hash: str) -> bool:
    try:
        raw = base64.b64decode(stored_hash, validate=True)
    except ValueError:
        return False
    return len(raw) > 32 and hmac.compare_digest(hash_password(password, raw[:-32]), stored_hash)


def parse_response(mechanism: str, response: bytes) -> tuple[str, str] | None:
    """The (username, password) of a start-ok response, None if malformed or unsupported."""
    if mechanism == "PLAIN":
        parts = response.split(b"\x00")
        if len(parts) != 3:
            return None
        return parts[1].decode(errors="replace"), parts[2].decode(errors="replace")
    if mechanism == "AMQPLAIN":
        # A field table without its length prefix.
        try:
            table, _ = values.decode_table(len(response).to_bytes(4, "big") + response, 0)
        except Exception:
            return None
        login, password = table.get("LOGIN"), table.get("PASSWORD")
        if not isinstance(login, str) or not isinstance(password, str):
            return None
        return login, password
    return None


def offered_mechanisms(peer_common_name: str | None) -> tuple[str, ...]:
    """What connection.start offers: EXTERNAL first when a verified client certificate
    names a user, as RabbitMQ lists it."""
    return (EXTERNAL, *MECHANISMS) if peer_common_name is not None else MECHANISMS
