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
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from . import errors

_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)

_u8 = struct.Struct(">B")
_i8 = struct.Struct(">b")
_u16 = struct.Struct(">H")
_i16 = struct.Struct(">h")
_u32 = U32 = struct.Struct(">I")
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


#: Exceptions a generated encoder turns into a 502 syntax error: an integer out of its
#: field's range, a string that is not encodable.
ENCODE_ERRORS = (struct.error, UnicodeEncodeError)
#: Exceptions a generated decoder turns into a 502 syntax error: input that ends too early.
DECODE_ERRORS = (struct.error, IndexError)


# -- strings -------------------------------------------------------------------------------


#: The length octet of a short string of each length.
_LENGTH_OCTETS = tuple(bytes((n,)) for n in range(256))


def encode_shortstr(value: str | bytes) -> bytes:
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    if len(raw) > 255:
        raise syntax_error(f"short string of {len(raw)} bytes exceeds 255: {raw[:40]!r}...")
    return _LENGTH_OCTETS[len(raw)] + raw


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


EMPTY_CONTENT = Content()


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


# -- 0-10 draft: uuid and rfc1982-long-set -------------------------------------------------

NIL_UUID = uuid.UUID(int=0)


def decode_uuid(data: bytes, offset: int) -> uuid.UUID:
    """The 16-octet UUID at ``offset`` (RFC 4122 byte order, as ``UUID.bytes``)."""
    raw = bytes(data[offset : offset + 16])
    if len(raw) != 16:
        raise syntax_error("uuid runs past the end of the frame")
    return uuid.UUID(bytes=raw)


_LONG_PAIR = struct.Struct(">II")


def encode_long_set(pairs: Sequence[tuple[int, int]]) -> bytes:
    """An rfc1982-long-set: a short holding the byte length of the longs that follow, each
    closed interval (first, last) two longs, as Qpid's transitional 0-10 codec writes it."""
    size = 8 * len(pairs)
    if size > 0xFFFF:
        raise syntax_error(f"rfc1982-long-set of {len(pairs)} intervals exceeds 65535 octets")
    return _u16.pack(size) + b"".join(_LONG_PAIR.pack(first, last) for first, last in pairs)


def decode_long_set(data: bytes, offset: int) -> tuple[list[tuple[int, int]], int]:
    (size,) = _u16.unpack_from(data, offset)
    if size % 8:
        raise syntax_error(f"rfc1982-long-set of {size} octets is not whole (first, last) pairs")
    start, end = offset + 2, offset + 2 + size
    if end > len(data):
        raise syntax_error("rfc1982-long-set runs past the end of the frame")
    pairs: list[tuple[int, int]] = [_LONG_PAIR.unpack_from(data, at) for at in range(start, end, 8)]
    return pairs, end


# -- timestamps ----------------------------------------------------------------------------

_SECOND = datetime.timedelta(seconds=1)
_MAX_TIMESTAMP = 2**64 - 1


def timestamp_seconds(value: int | datetime.datetime) -> int:
    """Seconds since the epoch (a naive datetime is UTC); a 502 outside the unsigned 64-bit
    range of the wire."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_UTC)
        seconds = (value - _EPOCH) // _SECOND  # integer arithmetic: no float rounding
    else:
        seconds = int(value)
    if not 0 <= seconds <= _MAX_TIMESTAMP:
        raise syntax_error(f"timestamp {value!r} is outside 0 .. 2**64-1 seconds since 1970")
    return seconds


def datetime_from_seconds(seconds: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=seconds)


# -- field tables: encoding ----------------------------------------------------------------


def encode_table(table: Mapping[str, Any] | None, depth: int = 0) -> bytes:
    if not table:
        return b"\x00\x00\x00\x00"
    if depth > MAX_TABLE_DEPTH:
        raise syntax_error(f"field table nested deeper than {MAX_TABLE_DEPTH}")
    parts: list[bytes] = []
    append = parts.append
    encoders = _ENCODERS
    for key, value in table.items():
        append(encode_shortstr(key))
        encoder = encoders.get(value.__class__)
        append(encoder(value, depth) if encoder else _encode_other(value, depth))
    body = b"".join(parts)
    return _u32.pack(len(body)) + body


def encode_array(values: Sequence[Any], depth: int = 0) -> bytes:
    if depth > MAX_TABLE_DEPTH:
        raise syntax_error(f"field array nested deeper than {MAX_TABLE_DEPTH}")
    body = b"".join(encode_field_value(v, depth) for v in values)
    return _u32.pack(len(body)) + body


def encode_field_value(value: Any, depth: int = 0) -> bytes:
    """One typed field value: the type octet and the value. ``depth`` is the nesting level
    of the table or array holding it."""
    encoder = _ENCODERS.get(value.__class__)
    return encoder(value, depth) if encoder else _encode_other(value, depth)


def _encode_int(value: int, depth: int) -> bytes:
    if -(2**31) <= value < 2**31:
        return b"I" + _i32.pack(value)
    if -(2**63) <= value < 2**63:
        return b"l" + _i64.pack(value)
    raise syntax_error(f"integer {value} does not fit a signed 64-bit field")


def _encode_str(value: str, depth: int) -> bytes:
    raw = value.encode("utf-8", "surrogateescape")
    return b"S" + _u32.pack(len(raw)) + raw


def _encode_bytes(value: bytes | bytearray | memoryview, depth: int) -> bytes:
    raw = bytes(value)
    return b"x" + _u32.pack(len(raw)) + raw


def _encode_decimal(value: decimal.Decimal, depth: int) -> bytes:
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise syntax_error(f"decimal {value} is not finite")
    if exponent > 10:  # no int32 has more digits; refuse before computing 10**exponent
        raise syntax_error(f"decimal {value} does not fit scale octet + int32")
    unscaled = int("".join(map(str, digits)) or "0") * 10 ** max(exponent, 0)
    unscaled = -unscaled if sign else unscaled
    scale = max(0, -exponent)
    if scale > 255 or not -(2**31) <= unscaled < 2**31:
        raise syntax_error(f"decimal {value} does not fit scale octet + int32")
    return b"D" + _decimal.pack(scale, unscaled)


def _encode_datetime(value: datetime.datetime, depth: int) -> bytes:
    return b"T" + _u64.pack(timestamp_seconds(value))


def _encode_nested_table(value: Mapping[str, Any], depth: int) -> bytes:
    return b"F" + encode_table(value, depth + 1)


def _encode_nested_array(value: Sequence[Any], depth: int) -> bytes:
    return b"A" + encode_array(value, depth + 1)


#: Encoders by exact type (a dict lookup instead of an isinstance chain); subclasses go
#: through ``_encode_other``.
_ENCODERS: dict[type, Callable[[Any, int], bytes]] = {
    type(None): lambda value, depth: b"V",
    bool: lambda value, depth: b"t\x01" if value else b"t\x00",
    int: _encode_int,
    str: _encode_str,
    bytes: _encode_bytes,
    bytearray: _encode_bytes,
    memoryview: _encode_bytes,
    float: lambda value, depth: b"d" + _f64.pack(value),
    decimal.Decimal: _encode_decimal,
    datetime.datetime: _encode_datetime,
    dict: _encode_nested_table,
    list: _encode_nested_array,
    tuple: _encode_nested_array,
}


class Long(int):
    """An int encoded as a signed 64-bit field value (``l``) even when it fits 32 bits
    (e.g. RabbitMQ's ``x-stream-offset`` header, which clients read as a long)."""


_ENCODERS[Long] = lambda value, depth: b"l" + _i64.pack(value)
#: Order matters: bool before int, as bool is an int.
_BASE_TYPES = (
    bool,
    int,
    str,
    bytes,
    bytearray,
    memoryview,
    float,
    decimal.Decimal,
    datetime.datetime,
    dict,
    list,
    tuple,
)


def _encode_other(value: Any, depth: int) -> bytes:
    """Values of a subclass of a field type (an IntEnum, an OrderedDict, ...) or a Mapping."""
    for base in _BASE_TYPES:
        if isinstance(value, base):
            return _ENCODERS[base](value, depth)
    if isinstance(value, Mapping):
        return _encode_nested_table(value, depth)
    raise syntax_error(f"no AMQP field type for a value of type {type(value).__name__}")


# -- field tables: decoding ----------------------------------------------------------------


def _decode_decimal(data: bytes, offset: int, depth: int) -> tuple[decimal.Decimal, int]:
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
    ord("D"): _decode_decimal,
    ord("S"): _decode_longstr_value,
    ord("x"): _decode_bytes_value,
    ord("A"): _decode_array_value,
    ord("T"): _decode_timestamp,
    ord("F"): _decode_table_value,
    ord("V"): _decode_void,
}
_TYPE_S, _TYPE_I, _TYPE_T = ord("S"), ord("I"), ord("t")


def _decode_field_value(data: bytes, offset: int, depth: int) -> tuple[Any, int]:
    """The value at ``offset`` (its type octet first) and the offset after it.

    The types of most values (long strings, int32, booleans) are decoded inline; the rest go
    through ``_FIELD_DECODERS``. Bounds are checked by the caller against its length.
    """
    kind = data[offset]
    offset += 1
    if kind == _TYPE_S:
        end = offset + 4 + _u32.unpack_from(data, offset)[0]
        raw = data[offset + 4 : end]
        try:
            return raw.decode("utf-8"), end
        except UnicodeDecodeError:
            return bytes(raw), end
    if kind == _TYPE_I:
        return _i32.unpack_from(data, offset)[0], offset + 4
    if kind == _TYPE_T:
        return data[offset] != 0, offset + 1
    decoder = _FIELD_DECODERS.get(kind)
    if decoder is None:
        raise syntax_error(f"unknown field-table value type {chr(kind)!r} (0x{kind:02x})")
    return decoder(data, offset, depth)


def container_bounds(data: bytes, offset: int, depth: int, what: str) -> tuple[int, int]:
    """(start, end) of the contents of the table or array whose long length is at ``offset``
    (``what`` names it in the error when it is nested too deep or runs past the frame)."""
    if depth > MAX_TABLE_DEPTH:
        raise syntax_error(f"field {what} nested deeper than {MAX_TABLE_DEPTH}")
    start = offset + 4
    end = start + _u32.unpack_from(data, offset)[0]
    if end > len(data):
        raise syntax_error(f"field {what} runs past the end of the frame")
    return start, end


def _decode_table(data: bytes, offset: int, depth: int) -> tuple[dict[str, Any], int]:
    offset, end = container_bounds(data, offset, depth, "table")
    table: dict[str, Any] = {}
    while offset < end:
        key_end = offset + 1 + data[offset]
        key = data[offset + 1 : key_end].decode("utf-8", "surrogateescape")
        table[key], offset = _decode_field_value(data, key_end, depth)
    if offset != end:
        raise syntax_error("field table length does not match its contents")
    return table, end


def _decode_array(data: bytes, offset: int, depth: int) -> tuple[list[Any], int]:
    offset, end = container_bounds(data, offset, depth, "array")
    values: list[Any] = []
    while offset < end:
        value, offset = _decode_field_value(data, offset, depth)
        values.append(value)
    if offset != end:
        raise syntax_error("field array length does not match its contents")
    return values, end


def decode_table(data: bytes, offset: int) -> tuple[dict[str, Any], int]:
    """Decode a field table at ``offset``; returns the table and the offset after it."""
    try:
        return _decode_table(data, offset, 0)
    except (struct.error, IndexError):
        raise syntax_error("truncated field table") from None
