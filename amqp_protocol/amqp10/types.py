"""The AMQP 1.0 type system (OASIS AMQP 1.0, part 1): every primitive encoding, compact forms
included, lists, maps, arrays and described types, encoded from and decoded to plain Python
values.

Decoding gives plain values where Python has one (``None``, ``bool``, ``int`` for every
integer type, ``float``, ``str``, ``bytes``, ``list``, ``dict``, ``uuid.UUID``) and a small
marker type where the AMQP type matters to a reader: ``Symbol`` (a ``str``), ``Timestamp``
(an ``int`` of milliseconds since the epoch), ``Char``, ``Decimal32/64/128`` (the raw
IEEE 754 bytes), ``Described`` and ``Array`` (an array's element constructor is kept: an
empty array has a type). Encoding takes the same values; an ``int`` is an ``int`` when it fits
32 bits, else a ``long``; the fixed-width wrappers (``UByte``, ``ULong``, ...) choose another
integer type. Every value is written in its smallest encoding, as RabbitMQ writes it.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

#: What the decoders read: the bytes of a message, or a view of them (a chunk's record).
Buffer = bytes | bytearray | memoryview


class AMQP10DecodeError(ValueError):
    """The bytes are not a well-formed AMQP 1.0 encoding; the message says where and why."""


class Symbol(str):
    """An AMQP ``symbol`` (ASCII; keys of annotations, content types)."""

    __slots__ = ()


class Timestamp(int):
    """An AMQP ``timestamp``: milliseconds since the Unix epoch."""

    __slots__ = ()


class Char(str):
    """An AMQP ``char``: one Unicode code point."""

    __slots__ = ()


class _Fixed(int):
    """An integer written as the AMQP type of its class, whatever its value."""

    __slots__ = ()


class UByte(_Fixed):
    __slots__ = ()


class UShort(_Fixed):
    __slots__ = ()


class UInt(_Fixed):
    __slots__ = ()


class ULong(_Fixed):
    __slots__ = ()


class Byte(_Fixed):
    __slots__ = ()


class Short(_Fixed):
    __slots__ = ()


class Int(_Fixed):
    __slots__ = ()


class Long(_Fixed):
    __slots__ = ()


class Boolean(_Fixed):
    """A boolean (1 or 0) written in the one-byte form ``0x56``, as RabbitMQ writes the
    booleans it converts from 0-9-1 headers (a plain ``bool`` takes ``0x41``/``0x42``)."""

    __slots__ = ()


class Float(float):
    """A ``float`` written as AMQP's 32-bit ``float`` (a plain ``float`` is a ``double``)."""

    __slots__ = ()


class Decimal32(bytes):
    """An IEEE 754 decimal32 as its 4 bytes (kept as they are, never interpreted)."""

    __slots__ = ()


class Decimal64(bytes):
    __slots__ = ()


class Decimal128(bytes):
    __slots__ = ()


class Described(NamedTuple):
    """A described value: a descriptor (a symbol or an unsigned long) and the value."""

    descriptor: Any
    value: Any


class Array(NamedTuple):
    """An AMQP ``array``: ``constructor`` is the element's format code (0x00 for described
    elements, whose descriptor is ``descriptor``) and ``items`` its values."""

    constructor: int
    items: list[Any]
    descriptor: Any = None


_u8 = struct.Struct(">B")
_u16 = struct.Struct(">H")
_u32 = struct.Struct(">I")
_u64 = struct.Struct(">Q")
_i8 = struct.Struct(">b")
_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")
_f32 = struct.Struct(">f")
_f64 = struct.Struct(">d")
_u32_pair = struct.Struct(">II")

# -- decoding -------------------------------------------------------------------------------

Decoder = Callable[[Buffer, int], tuple[Any, int]]


def _struct_decoder(s: struct.Struct, wrap: Callable[[Any], Any] | None = None) -> Decoder:
    size, unpack = s.size, s.unpack_from
    if wrap is None:

        def decode(data: Buffer, offset: int) -> tuple[Any, int]:
            return unpack(data, offset)[0], offset + size

    else:

        def decode(data: Buffer, offset: int) -> tuple[Any, int]:
            return wrap(unpack(data, offset)[0]), offset + size

    return decode


def _constant(value: Any) -> Decoder:
    def decode(data: Buffer, offset: int) -> tuple[Any, int]:
        return value, offset

    return decode


def _variable(width: struct.Struct, convert: Callable[[Any], Any]) -> Decoder:
    size, unpack = width.size, width.unpack_from

    def decode(data: Buffer, offset: int) -> tuple[Any, int]:
        start = offset + size
        end = start + unpack(data, offset)[0]
        if end > len(data):
            raise AMQP10DecodeError(f"a variable-width value at {offset} runs past the end")
        return convert(data[start:end]), end

    return decode


def _utf8(raw: bytes) -> str:
    return str(raw, "utf-8")


def _symbol(raw: bytes) -> Symbol:
    return Symbol(str(raw, "ascii"))


def _compound(width: struct.Struct, as_map: bool) -> Decoder:
    size, unpack = width.size, width.unpack_from

    def decode(data: Buffer, offset: int) -> tuple[Any, int]:
        byte_size = unpack(data, offset)[0]
        count = unpack(data, offset + size)[0]
        end = offset + size + byte_size
        if end > len(data):
            raise AMQP10DecodeError(f"a list or map at {offset} runs past the end")
        position = offset + 2 * size
        if as_map and count % 2:
            raise AMQP10DecodeError(f"a map at {offset} has an odd count of {count}")
        table = _TABLE
        items: list[Any] = []
        append = items.append
        # The usual items (short strings and symbols, null, small ints) inline, the rest by
        # the table; an item that overruns makes ``position`` miss ``end``, checked below.
        for _ in range(count):
            code = data[position]
            if code == 0xA1 or code == 0xA3:
                start = position + 2
                position = start + data[position + 1]
                text = str(data[start:position], "utf-8")
                append(text if code == 0xA1 else Symbol(text))
            elif code == 0x40:
                append(None)
                position += 1
            elif code == 0x54 or code == 0x55:
                append(data[position + 1] - ((data[position + 1] & 0x80) << 1))
                position += 2
            else:
                item, position = table[code](data, position + 1)
                append(item)
        if position != end:
            raise AMQP10DecodeError(
                f"a list or map at {offset} declares {byte_size} bytes, its items take "
                f"{position - offset - size}"
            )
        if as_map:
            pairs = iter(items)
            return dict(zip(pairs, pairs, strict=True)), end
        return items, end

    return decode


def _array(width: struct.Struct) -> Decoder:
    size, unpack = width.size, width.unpack_from

    def decode(data: Buffer, offset: int) -> tuple[Any, int]:
        byte_size = unpack(data, offset)[0]
        count = unpack(data, offset + size)[0]
        end = offset + size + byte_size
        position = offset + 2 * size
        descriptor = None
        constructor = data[position]
        position += 1
        if constructor == 0x00:
            descriptor, position = decode_value(data, position)
            constructor = data[position]
            position += 1
        element = _DECODERS.get(constructor)
        if element is None:
            raise AMQP10DecodeError(f"unknown array element constructor 0x{constructor:02x}")
        items = []
        for _ in range(count):
            item, position = element(data, position)
            items.append(item if descriptor is None else Described(descriptor, item))
        if position != end:
            raise AMQP10DecodeError(
                f"an array at {offset} declares {byte_size} bytes, its items take "
                f"{position - offset - size}"
            )
        return Array(constructor, items, descriptor), end

    return decode


def _described(data: Buffer, offset: int) -> tuple[Any, int]:
    descriptor, offset = decode_value(data, offset)
    value, offset = decode_value(data, offset)
    return Described(descriptor, value), offset


def _uuid(data: Buffer, offset: int) -> tuple[uuid.UUID, int]:
    return uuid.UUID(bytes=bytes(data[offset : offset + 16])), offset + 16


def _char(data: Buffer, offset: int) -> tuple[Char, int]:
    return Char(chr(_u32.unpack_from(data, offset)[0])), offset + 4


def _boolean(data: Buffer, offset: int) -> tuple[bool, int]:
    return data[offset] != 0, offset + 1


def _raw(kind: type[bytes], size: int) -> Decoder:
    def decode(data: Buffer, offset: int) -> tuple[Any, int]:
        return kind(data[offset : offset + size]), offset + size

    return decode


def _list0(data: Buffer, offset: int) -> tuple[list[Any], int]:
    return [], offset


_DECODERS: dict[int, Decoder] = {
    0x00: _described,
    0x40: _constant(None),
    0x41: _constant(True),
    0x42: _constant(False),
    0x56: _boolean,
    0x50: _struct_decoder(_u8),
    0x60: _struct_decoder(_u16),
    0x70: _struct_decoder(_u32),
    0x52: _struct_decoder(_u8),
    0x43: _constant(0),
    0x80: _struct_decoder(_u64),
    0x53: _struct_decoder(_u8),
    0x44: _constant(0),
    0x51: _struct_decoder(_i8),
    0x61: _struct_decoder(_i16),
    0x71: _struct_decoder(_i32),
    0x54: _struct_decoder(_i8),
    0x81: _struct_decoder(_i64),
    0x55: _struct_decoder(_i8),
    0x72: _struct_decoder(_f32),
    0x82: _struct_decoder(_f64),
    0x74: _raw(Decimal32, 4),
    0x84: _raw(Decimal64, 8),
    0x94: _raw(Decimal128, 16),
    0x73: _char,
    0x83: _struct_decoder(_i64, Timestamp),
    0x98: _uuid,
    0xA0: _variable(_u8, bytes),
    0xB0: _variable(_u32, bytes),
    0xA1: _variable(_u8, _utf8),
    0xB1: _variable(_u32, _utf8),
    0xA3: _variable(_u8, _symbol),
    0xB3: _variable(_u32, _symbol),
    0x45: _list0,
    0xC0: _compound(_u8, as_map=False),
    0xD0: _compound(_u32, as_map=False),
    0xC1: _compound(_u8, as_map=True),
    0xD1: _compound(_u32, as_map=True),
    0xE0: _array(_u8),
    0xF0: _array(_u32),
}


def _unknown(data: Buffer, offset: int) -> tuple[Any, int]:
    code = data[offset - 1]
    raise AMQP10DecodeError(f"unknown AMQP 1.0 format code 0x{code:02x} at {offset - 1}")


#: The decoders by format code, for the inner loops (a list index is the cheapest dispatch).
_TABLE: list[Decoder] = [_DECODERS.get(code, _unknown) for code in range(256)]


def decode_value(data: Buffer, offset: int = 0) -> tuple[Any, int]:
    """The value encoded at ``offset`` of ``data`` and the offset after it."""
    try:
        code = data[offset]
    except IndexError:
        raise AMQP10DecodeError(f"a value expected at {offset}, the data ends there") from None
    try:
        return _TABLE[code](data, offset + 1)
    except (struct.error, IndexError):
        raise AMQP10DecodeError(f"the value at {offset} runs past the end of the data") from None
    except UnicodeDecodeError as e:
        raise AMQP10DecodeError(f"the string at {offset} is not valid: {e.reason}") from None


def decode(data: Buffer) -> Any:
    """The one value ``data`` holds (AMQP10DecodeError on trailing bytes)."""
    value, end = decode_value(data, 0)
    if end != len(data):
        raise AMQP10DecodeError(f"{len(data) - end} bytes after the value, which ends at {end}")
    return value


# -- encoding -------------------------------------------------------------------------------


def encode(value: Any) -> bytes:
    """``value`` in its smallest AMQP 1.0 encoding."""
    out = bytearray()
    encode_into(out, value)
    return bytes(out)


def encode_into(out: bytearray, value: Any) -> None:
    """Append ``value``'s encoding to ``out``."""
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        encoder = _encoder_of_subclass(value)
    encoder(out, value)


def _encode_int(out: bytearray, value: int) -> None:
    if -128 <= value <= 127:
        out += b"\x54" + _i8.pack(value)
    elif -(2**31) <= value < 2**31:
        out += b"\x71" + _i32.pack(value)
    else:
        _encode_long(out, value)


def _encode_long(out: bytearray, value: int) -> None:
    if -128 <= value <= 127:
        out += b"\x55" + _i8.pack(value)
    elif -(2**63) <= value < 2**63:
        out += b"\x81" + _i64.pack(value)
    else:
        raise ValueError(f"{value} does not fit an AMQP 1.0 long (-2**63 .. 2**63-1)")


def _unsigned(code: int, small: int | None, zero: int | None, s: struct.Struct) -> Any:
    limit = 2 ** (8 * s.size)

    def encode(out: bytearray, value: int) -> None:
        if not 0 <= value < limit:
            raise ValueError(f"{value} does not fit 0 .. {limit - 1}")
        if value == 0 and zero is not None:
            out.append(zero)
        elif value < 256 and small is not None:
            out += bytes((small, value))
        else:
            out.append(code)
            out += s.pack(value)

    return encode


def _signed(code: int, small: int | None, s: struct.Struct) -> Any:
    def encode(out: bytearray, value: int) -> None:
        if small is not None and -128 <= value <= 127:
            out += bytes((small,)) + _i8.pack(value)
        else:
            out.append(code)
            try:
                out += s.pack(value)
            except struct.error:
                raise ValueError(f"{value} does not fit {8 * s.size} bits signed") from None

    return encode


def _encode_variable(small: int, large: int) -> Any:
    def encode(out: bytearray, raw: bytes) -> None:
        if len(raw) < 256:
            out += bytes((small, len(raw)))
        else:
            out.append(large)
            out += _u32.pack(len(raw))
        out += raw

    return encode


_encode_binary = _encode_variable(0xA0, 0xB0)
_encode_utf8_bytes = _encode_variable(0xA1, 0xB1)
_encode_symbol_bytes = _encode_variable(0xA3, 0xB3)


def _encode_str(out: bytearray, value: str) -> None:
    _encode_utf8_bytes(out, value.encode("utf-8"))


def _encode_symbol(out: bytearray, value: str) -> None:
    _encode_symbol_bytes(out, value.encode("ascii"))


def _encode_bytes(out: bytearray, value: bytes | bytearray | memoryview) -> None:
    _encode_binary(out, bytes(value))


def _encode_compound(out: bytearray, items: Sequence[Any], count: int, codes: bytes) -> None:
    """A list or map (``codes``: its 8-bit and 32-bit format codes) of encoded ``items``."""
    body = bytearray()
    append = body.append
    encoders = _ENCODERS
    # The usual items (null, short strings and symbols) inline, the rest by their encoder.
    for item in items:
        kind = type(item)
        if item is None:
            append(0x40)
        elif kind is str or kind is Symbol:
            raw = item.encode("utf-8" if kind is str else "ascii")
            if len(raw) < 256:
                append(0xA1 if kind is str else 0xA3)
                append(len(raw))
                body += raw
            else:
                encoders[kind](body, item)
        else:
            encoder = encoders.get(kind)
            if encoder is None:
                encoder = _encoder_of_subclass(item)
            encoder(body, item)
    if len(body) + 1 < 256 and count < 256:
        out += bytes((codes[0], len(body) + 1, count))
    else:
        out.append(codes[1])
        out += _u32_pair.pack(len(body) + 4, count)
    out += body


def _encode_list(out: bytearray, value: Sequence[Any]) -> None:
    if not value:
        out.append(0x45)
    else:
        _encode_compound(out, value, len(value), b"\xc0\xd0")


def _encode_map(out: bytearray, value: Mapping[Any, Any]) -> None:
    items = [x for pair in value.items() for x in pair]
    _encode_compound(out, items, len(items), b"\xc1\xd1")


def _encode_described(out: bytearray, value: Described) -> None:
    out.append(0x00)
    encode_into(out, value.descriptor)
    encode_into(out, value.value)


#: Element encoders of arrays: the full-width form of each constructor (an array's elements
#: share one constructor, so no compact per-element form applies).
_ARRAY_ELEMENTS: dict[int, Callable[[bytearray, Any], None]] = {
    0x56: lambda out, v: out.append(1 if v else 0),
    0x50: lambda out, v: out.extend(_u8.pack(v)),
    0x60: lambda out, v: out.extend(_u16.pack(v)),
    0x70: lambda out, v: out.extend(_u32.pack(v)),
    0x80: lambda out, v: out.extend(_u64.pack(v)),
    0x51: lambda out, v: out.extend(_i8.pack(v)),
    0x61: lambda out, v: out.extend(_i16.pack(v)),
    0x71: lambda out, v: out.extend(_i32.pack(v)),
    0x81: lambda out, v: out.extend(_i64.pack(v)),
    0x72: lambda out, v: out.extend(_f32.pack(v)),
    0x82: lambda out, v: out.extend(_f64.pack(v)),
    0x83: lambda out, v: out.extend(_i64.pack(v)),
    0x73: lambda out, v: out.extend(_u32.pack(ord(v))),
    0x98: lambda out, v: out.extend(v.bytes),
    0x74: lambda out, v: out.extend(v),
    0x84: lambda out, v: out.extend(v),
    0x94: lambda out, v: out.extend(v),
    0xB0: lambda out, v: out.extend(_u32.pack(len(v)) + bytes(v)),
    0xB1: lambda out, v: out.extend(_u32.pack(len(b := v.encode("utf-8"))) + b),
    0xB3: lambda out, v: out.extend(_u32.pack(len(b := v.encode("ascii"))) + b),
}


def _encode_array(out: bytearray, value: Array) -> None:
    body = bytearray()
    if value.descriptor is not None:
        body.append(0x00)
        encode_into(body, value.descriptor)
    body.append(value.constructor)
    element = _ARRAY_ELEMENTS.get(value.constructor)
    if element is None:
        raise ValueError(
            f"array constructor 0x{value.constructor:02x} is not one of "
            f"{', '.join(f'0x{c:02x}' for c in sorted(_ARRAY_ELEMENTS))}"
        )
    for item in value.items:
        element(body, item.value if isinstance(item, Described) else item)
    count = len(value.items)
    if len(body) + 1 < 256 and count < 256:
        out += bytes((0xE0, len(body) + 1, count))
    else:
        out.append(0xF0)
        out += _u32_pair.pack(len(body) + 4, count)
    out += body


_ENCODERS: dict[type, Callable[[bytearray, Any], None]] = {
    type(None): lambda out, v: out.append(0x40),
    bool: lambda out, v: out.append(0x41 if v else 0x42),
    int: _encode_int,
    float: lambda out, v: out.extend(b"\x82" + _f64.pack(v)),
    str: _encode_str,
    bytes: _encode_bytes,
    bytearray: _encode_bytes,
    memoryview: _encode_bytes,
    list: _encode_list,
    tuple: _encode_list,
    dict: _encode_map,
    Symbol: _encode_symbol,
    Char: lambda out, v: out.extend(b"\x73" + _u32.pack(ord(v))),
    Timestamp: lambda out, v: out.extend(b"\x83" + _i64.pack(v)),
    uuid.UUID: lambda out, v: out.extend(b"\x98" + v.bytes),
    UByte: _unsigned(0x50, None, None, _u8),
    UShort: _unsigned(0x60, None, None, _u16),
    UInt: _unsigned(0x70, 0x52, 0x43, _u32),
    ULong: _unsigned(0x80, 0x53, 0x44, _u64),
    Byte: _signed(0x51, None, _i8),
    Short: _signed(0x61, None, _i16),
    Int: _signed(0x71, 0x54, _i32),
    Long: _signed(0x81, 0x55, _i64),
    Boolean: lambda out, v: out.extend(b"\x56\x01" if v else b"\x56\x00"),
    Float: lambda out, v: out.extend(b"\x72" + _f32.pack(v)),
    Decimal32: lambda out, v: out.extend(b"\x74" + v),
    Decimal64: lambda out, v: out.extend(b"\x84" + v),
    Decimal128: lambda out, v: out.extend(b"\x94" + v),
    Described: _encode_described,
    Array: _encode_array,
}

_BASES: tuple[type, ...] = (bool, int, float, str, bytes, list, tuple, dict)


def _encoder_of_subclass(value: Any) -> Callable[[bytearray, Any], None]:
    """Subclasses of the base types (an IntEnum, an OrderedDict) and other mappings."""
    for base in _BASES:
        if isinstance(value, base):
            return _ENCODERS[base]
    if isinstance(value, Mapping):
        return _encode_map
    raise TypeError(
        f"no AMQP 1.0 type for a value of type {type(value).__name__}: give None, bool, int, "
        "float, str, bytes, list, dict, uuid.UUID or a type of amqp_protocol.amqp10.types"
    )
