"""The SASL mechanisms the client authenticates with: PLAIN, RabbitMQ's AMQPLAIN, and
EXTERNAL (the TLS client certificate names the user; the response is empty).

Rule connection.start-ok.mechanism:security: the client uses the highest-level security
profile it can handle among those the server lists, whatever order the server lists them
in. The ranking, highest first (``SECURITY_TIERS``):

1. EXTERNAL: the identity is the client certificate the server verified during the TLS
   handshake; no secret crosses the connection. The client can handle it only over TLS with
   a client certificate (``certfile`` in the URL, or ``auth_mechanism=external``).
2. PLAIN and AMQPLAIN: both send the password, protected only by TLS when there is one.
   They are equal; between them the client keeps its own order (PLAIN first, as RabbitMQ's
   clients do).
"""

from __future__ import annotations

from amqp_protocol import values

#: Mechanisms by security level, highest first; mechanisms within a tuple rank equal.
SECURITY_TIERS: tuple[tuple[str, ...], ...] = (("EXTERNAL",), ("PLAIN", "AMQPLAIN"))


def _tier(mechanism: str) -> int:
    return next(
        (i for i, tier in enumerate(SECURITY_TIERS) if mechanism in tier), len(SECURITY_TIERS)
    )


def choose_mechanism(offered: bytes | str, ours: tuple[str, ...]) -> str | None:
    """The mechanism of the highest security tier among ``ours`` (those this connection can
    handle, preferred first) that the server lists in connection.start's ``mechanisms``;
    ties go to the earlier of ``ours``. None when there is no common mechanism."""
    text = offered.decode("utf-8", "replace") if isinstance(offered, bytes) else offered
    available = set(text.split())
    common = [m for m in ours if m in available]
    return min(common, key=lambda m: (_tier(m), ours.index(m)), default=None)


def response(mechanism: str, username: str, password: str) -> bytes:
    """The start-ok ``response`` for ``mechanism``.

    AMQPLAIN's response is a field table of LOGIN and PASSWORD without the table's own
    length prefix (what RabbitMQ and py-amqp exchange)."""
    if mechanism == "PLAIN":
        return b"\0" + username.encode() + b"\0" + password.encode()
    if mechanism == "AMQPLAIN":
        return values.encode_table({"LOGIN": username, "PASSWORD": password})[4:]
    if mechanism == "EXTERNAL":
        return b""
    raise ValueError(f"unsupported SASL mechanism {mechanism!r}")
