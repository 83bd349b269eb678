"""Encoding and decoding of AMQP primitive values and field tables.

Field tables use the type codes RabbitMQ and Qpid agree on (the 0-9-1 errata), which is
what every client sends: ``t b B s u I i l f d D S x A T F V``. Decoding returns Python
values; encoding picks the type code from the Python type:

==================== =========== ==========================================
Python               type code   note
==================== =========== ==========================================
bool                 t
int                  I or l      int32 when it fits, else int64
float                d
decimal.Decimal      D
str                  S           UTF-8
bytes, bytearray     x
datetime.datetime    T           seconds, UTC
dict                 F
list, tuple          A
None                 V
==================== =========== ==========================================

A ``S`` value that is not valid UTF-8 decodes to ``bytes``, so nothing is lost.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from . import errors

_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)

_u8 = struct.Struct(">B")
_i8 = struct.Struct(">b")
_u16 = struct.Struct(">H")
_i16 = struct.Struct(">h")
_u32 = struct.Struct(">I")
_i32 = struct.Struct(">i")
_u64 = struct.Struct(">Q")
_i64 = struct.Struct(">q")
_f32 = struct.Struct(">f")
_f64 = struct.Struct(">d")
_decimal = struct.Struct(">Bi")

MAX_TABLE_DEPTH = 64
"""Nesting deeper than this is refused: it bounds the recursion a hostile peer can cause."""


def syntax_error(text: str) -> errors.AMQPError:
    return errors.error_for_code(502)(text)


# -- strings -------------------------------------------------------------------------------


def encode_shortstr(value: str | bytes) -> bytes:
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    if len(raw) > 255:
        raise syntax_error(f"short string of {len(raw)} bytes exceeds 255: {raw[:40]!r}...")
    return bytes((len(raw),)) + raw


def decode_shortstr(data: bytes, offset: int) -> tuple[str, int]:
    length = data[offset]
    end = offset + 1 + length
    if end > len(data):
        raise syntax_error("short string runs past the end of the frame")
    return data[offset + 1 : end].decode("utf-8", "surrogateescape"), end


def encode_longstr(value: str | bytes) -> bytes:
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    return _u32.pack(len(raw)) + raw


def decode_longstr_bytes(data: bytes, offset: int) -> tuple[bytes, int]:
    (length,) = _u32.unpack_from(data, offset)
    start = offset + 4
    end = start + length
    if end > len(data):
        raise syntax_error("long string runs past the end of the frame")
    return bytes(data[start:end]), end


def decode_longstr(data: bytes, offset: int) -> tuple[str | bytes, int]:
    raw, end = decode_longstr_bytes(data, offset)
    try:
        return raw.decode("utf-8"), end
    except UnicodeDecodeError:
        return raw, end


# -- message.transfer content (0-9) ----------------------------------------------------------


class Content(NamedTuple):
    """A message body carried inline, or the name of a reference holding it."""

    data: bytes = b""
    reference: bool = False


def encode_content(value: Content | bytes) -> bytes:
    if not isinstance(value, Content):
        value = Content(bytes(value))
    return (b"\x01" if value.reference else b"\x00") + encode_longstr(value.data)


def decode_content(data: bytes, offset: int) -> tuple[Content, int]:
    kind = data[offset]
    if kind > 1:
        raise syntax_error(f"content kind {kind} is neither inline (0) nor reference (1)")
    raw, end = decode_longstr_bytes(data, offset + 1)
    return Content(raw, kind == 1), end


# -- timestamps ----------------------------------------------------------------------------


def timestamp_seconds(value: int | datetime.datetime) -> int:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_UTC)
        return int((value - _EPOCH).total_seconds())
    return int(value)


def datetime_from_seconds(seconds: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=seconds)


# -- field tables --------------------------------------------------------------------------


def encode_table(table: Mapping[str, Any] | None, depth: int = 0) -> bytes:
    if not table:
        return b"\x00\x00\x00\x00"
    parts: list[bytes] = []
    for key, value in table.items():
        parts.append(encode_shortstr(key))
        parts.append(encode_field_value(value, depth + 1))
    body = b"".join(parts)
    return _u32.pack(len(body)) + body


def encode_array(values: Sequence[Any], depth: int = 0) -> bytes:
    body = b"".join(encode_field_value(v, depth + 1) for v in values)
    return _u32.pack(len(body)) + body


def encode_field_value(value: Any, depth: int = 0) -> bytes:
    """One typed field value: the type octet and the value."""
    if depth > MAX_TABLE_DEPTH:
        raise syntax_error(f"field table nested deeper than {MAX_TABLE_DEPTH}")
    if value is None:
        return b"V"
    if value is True:
        return b"t\x01"
    if value is False:
        return b"t\x00"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"I" + _i32.pack(value)
        if -(2**63) <= value < 2**63:
            return b"l" + _i64.pack(value)
        raise syntax_error(f"integer {value} does not fit a signed 64-bit field")
    if isinstance(value, str):
        return b"S" + encode_longstr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"x" + encode_longstr(bytes(value))
    if isinstance(value, float):
        return b"d" + _f64.pack(value)
    if isinstance(value, decimal.Decimal):
        return b"D" + _encode_decimal(value)
    if isinstance(value, datetime.datetime):
        return b"T" + _u64.pack(timestamp_seconds(value))
    if isinstance(value, Mapping):
        return b"F" + encode_table(value, depth)
    if isinstance(value, (list, tuple)):
        return b"A" + encode_array(value, depth)
    raise syntax_error(f"no AMQP field type for a value of type {type(value).__name__}")


def _encode_decimal(value: decimal.Decimal) -> bytes:
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise syntax_error(f"decimal {value} is not finite")
    scale = max(0, -exponent)
    unscaled = int(value.scaleb(scale))
    if scale > 255 or not -(2**31) <= unscaled < 2**31:
        raise syntax_error(f"decimal {value} does not fit scale octet + int32")
    return _decimal.pack(scale, unscaled)


def _decode_decimal(data: bytes, offset: int) -> tuple[decimal.Decimal, int]:
    scale, unscaled = _decimal.unpack_from(data, offset)
    return decimal.Decimal(unscaled).scaleb(-scale), offset + 5


def _fixed(s: struct.Struct) -> Callable[[bytes, int, int], tuple[Any, int]]:
    size = s.size

    def decode(data: bytes, offset: int, depth: int) -> tuple[Any, int]:
        return s.unpack_from(data, offset)[0], offset + size

    return decode


def _decode_bool(data: bytes, offset: int, depth: int) -> tuple[bool, int]:
    return data[offset] != 0, offset + 1


def _decode_void(data: bytes, offset: int, depth: int) -> tuple[None, int]:
    return None, offset


def _decode_timestamp(data: bytes, offset: int, depth: int) -> tuple[datetime.datetime, int]:
    (seconds,) = _u64.unpack_from(data, offset)
    try:
        return datetime_from_seconds(seconds), offset + 8
    except OverflowError:
        raise syntax_error(f"timestamp {seconds} is out of range") from None


def _decode_longstr_value(data: bytes, offset: int, depth: int) -> tuple[str | bytes, int]:
    return decode_longstr(data, offset)


def _decode_bytes_value(data: bytes, offset: int, depth: int) -> tuple[bytes, int]:
    return decode_longstr_bytes(data, offset)


def _decode_decimal_value(data: bytes, offset: int, depth: int) -> tuple[decimal.Decimal, int]:
    return _decode_decimal(data, offset)


def _decode_table_value(data: bytes, offset: int, depth: int) -> tuple[dict[str, Any], int]:
    return _decode_table(data, offset, depth + 1)


def _decode_array_value(data: bytes, offset: int, depth: int) -> tuple[list[Any], int]:
    return _decode_array(data, offset, depth + 1)


_FIELD_DECODERS: dict[int, Callable[[bytes, int, int], tuple[Any, int]]] = {
    ord("t"): _decode_bool,
    ord("b"): _fixed(_i8),
    ord("B"): _fixed(_u8),
    ord("s"): _fixed(_i16),
    ord("u"): _fixed(_u16),
    ord("I"): _fixed(_i32),
    ord("i"): _fixed(_u32),
    ord("l"): _fixed(_i64),
    ord("L"): _fixed(_u64),
    ord("f"): _fixed(_f32),
    ord("d"): _fixed(_f64),
    ord("D"): _decode_decimal_value,
    ord("S"): _decode_longstr_value,
    ord("x"): _decode_bytes_value,
    ord("A"): _decode_array_value,
    ord("T"): _decode_timestamp,
    ord("F"): _decode_table_value,
    ord("V"): _decode_void,
}


def _decode_field_value(data: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if depth > MAX_TABLE_DEPTH:
        raise syntax_error(f"field table nested deeper than {MAX_TABLE_DEPTH}")
    kind = data[offset]
    decoder = _FIELD_DECODERS.get(kind)
    if decoder is None:
        raise syntax_error(f"unknown field-table value type {chr(kind)!r} (0x{kind:02x})")
    return decoder(data, offset + 1, depth)


def _decode_table(data: bytes, offset: int, depth: int) -> tuple[dict[str, Any], int]:
    (length,) = _u32.unpack_from(data, offset)
    offset += 4
    end = offset + length
    if end > len(data):
        raise syntax_error("field table runs past the end of the frame")
    table: dict[str, Any] = {}
    while offset < end:
        key, offset = decode_shortstr(data, offset)
        table[key], offset = _decode_field_value(data, offset, depth)
    if offset != end:
        raise syntax_error("field table length does not match its contents")
    return table, end


def _decode_array(data: bytes, offset: int, depth: int) -> tuple[list[Any], int]:
    (length,) = _u32.unpack_from(data, offset)
    offset += 4
    end = offset + length
    if end > len(data):
        raise syntax_error("field array runs past the end of the frame")
    values: list[Any] = []
    while offset < end:
        value, offset = _decode_field_value(data, offset, depth)
        values.append(value)
    if offset != end:
        raise syntax_error("field array length does not match its contents")
    return values, end


def decode_table(data: bytes, offset: int) -> tuple[dict[str, Any], int]:
    """Decode a field table at ``offset``; returns the table and the offset after it."""
    if data[offset : offset + 4] == b"\x00\x00\x00\x00":
        return {}, offset + 4
    try:
        return _decode_table(data, offset, 0)
    except (struct.error, IndexError):
        raise syntax_error("truncated field table") from None
