"""The SASL mechanisms the client authenticates with: PLAIN, RabbitMQ's AMQPLAIN, and
EXTERNAL (the TLS client certificate names the user; the response is empty)."""

from __future__ import annotations

from amqp_spark.protocol import values


def choose_mechanism(offered: bytes | str, ours: tuple[str, ...]) -> str | None:
    """The first of ``ours`` that the server lists in connection.start's ``mechanisms``."""
    text = offered.decode("utf-8", "replace") if isinstance(offered, bytes) else offered
    available = set(text.split())
    return next((m for m in ours if m in available), None)


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
