"""The names RabbitMQ gives field-table value types in its reply texts
(``{unacceptable_type,longstr}``, ``"expected integer, got bool"``)."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

_NAMES: tuple[tuple[type, str], ...] = (
    (str, "longstr"),
    (bytes, "binary"),
    (float, "double"),
    (decimal.Decimal, "decimal"),
    (datetime.datetime, "timestamp"),
    (dict, "table"),
    (list, "array"),
)


def amqp_type_name(value: Any) -> str:
    """The type RabbitMQ names for a decoded field-table value. Decoding keeps no integer
    width: an int is named as clients encode it (signedint when it fits 32 bits)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "signedint" if -(1 << 31) <= value < 1 << 31 else "long"
    for kind, name in _NAMES:
        if isinstance(value, kind):
            return name
    return "void"
