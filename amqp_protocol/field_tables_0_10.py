"""Field tables with the type codes of the transitional 0-10 draft.

The draft replaces the type letters of 0-9 (``S``, ``I``, ...) with its ``field-table-*``
constants: a code, a ``width`` (fixed-size values) or an ``lfwidth`` (the octets of a
variable value's length field), and a datatype. The generated module of the draft
(``generated.spec_0_10``) holds those constants as its XML states them and builds its table
codec from them with ``FieldTableCodec``; nothing here is written per type code.

Decoding, by datatype:

=================================== ===========================================================
datatype                            Python value
=================================== ===========================================================
signed-integer, unsigned-integer    int
ieee-float                          float
boolean                             bool
binary                              bytes (its width, or its length field's count of octets)
char                                a one-character str (width 1: ISO-8859-15, 4: UTF-32)
string                              str: ISO-8859-15 unless the name says utf8/utf16/utf32
                                    (big-endian, as every AMQP number); bytes if undecodable
decimal                             decimal.Decimal: scale octet, then a signed integer
special                             ``datetime``: datetime (POSIX seconds, UTC); ``uuid``: UUID
field-table                         dict
sequence                            list: type-value pairs
array                               list: one type code, a long count, then the values
void                                None
=================================== ===========================================================

A code the draft does not define is a syntax error (502): without its width nothing after
it could be read. Encoding picks the code from the Python type: bool ``boolean``; int
``signed-int``, ``signed-long`` or ``unsigned-long`` (the first that fits; ``values.Long``
always ``signed-long``); float ``double``; Decimal ``decimal`` or ``long-decimal``; str
``long-utf8-string``; bytes ``long-binary``; datetime ``datetime``; UUID ``uuid``; dict
``table``; list and tuple ``sequence``; None ``void``.
"""

from __future__ import annotations

import datetime
import decimal
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .spec import FieldTableType
from .values import (
    MAX_TABLE_DEPTH,
    Long,
    container_bounds,
    datetime_from_seconds,
    encode_shortstr,
    syntax_error,
    timestamp_seconds,
)

_Decoder = Callable[[bytes, int, int], tuple[Any, int]]
_Encoder = Callable[[Any, int], bytes]

_INTEGER_CODES = {
    ("signed-integer", 1): "b",
    ("signed-integer", 2): "h",
    ("signed-integer", 4): "i",
    ("signed-integer", 8): "q",
    ("unsigned-integer", 1): "B",
    ("unsigned-integer", 2): "H",
    ("unsigned-integer", 4): "I",
    ("unsigned-integer", 8): "Q",
    ("ieee-float", 4): "f",
    ("ieee-float", 8): "d",
    ("boolean", 1): "?",
}
_LENGTHS = {1: struct.Struct(">B"), 2: struct.Struct(">H"), 4: struct.Struct(">I")}
_U32 = _LENGTHS[4]
_U64 = struct.Struct(">Q")


def _text_encoding(name: str) -> str:
    for unicode in ("utf8", "utf16", "utf32"):
        if unicode in name:
            return {"utf8": "utf-8", "utf16": "utf-16-be", "utf32": "utf-32-be"}[unicode]
    return "iso8859-15"


def _text(raw: bytes, encoding: str) -> str | bytes:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError:
        return raw


class FieldTableCodec:
    """Encoder and decoder of field tables with the type codes ``types``."""

    def __init__(self, types: Iterable[FieldTableType]) -> None:
        self.types = {t.code: t for t in types}
        self._decoders: dict[int, _Decoder] = {
            code: self._decoder(t) for code, t in self.types.items()
        }
        codes = {t.name: t.code for t in self.types.values()}

        def fixed(name: str, fmt: str) -> _Encoder:
            packer = struct.Struct(">B" + fmt).pack
            code = codes[name]
            return lambda value, depth: packer(code, value)

        signed_int, signed_long = fixed("signed-int", "i"), fixed("signed-long", "q")
        unsigned_long = fixed("unsigned-long", "Q")

        def encode_int(value: int, depth: int) -> bytes:
            if -(2**31) <= value < 2**31:
                return signed_int(value, depth)
            if -(2**63) <= value < 2**63:
                return signed_long(value, depth)
            if 0 <= value < 2**64:
                return unsigned_long(value, depth)
            raise syntax_error(f"integer {value} does not fit a 64-bit field")

        decimal_code, long_decimal_code = codes["decimal"], codes["long-decimal"]

        def encode_decimal(value: decimal.Decimal, depth: int) -> bytes:
            sign, digits, exponent = value.as_tuple()
            if not isinstance(exponent, int) or exponent > 19:
                raise syntax_error(f"decimal {value} does not fit scale octet + int64")
            unscaled = int("".join(map(str, digits)) or "0") * 10 ** max(exponent, 0)
            unscaled, scale = (-unscaled if sign else unscaled), max(0, -exponent)
            if scale <= 255 and -(2**31) <= unscaled < 2**31:
                return struct.pack(">BBi", decimal_code, scale, unscaled)
            if scale <= 255 and -(2**63) <= unscaled < 2**63:
                return struct.pack(">BBq", long_decimal_code, scale, unscaled)
            raise syntax_error(f"decimal {value} does not fit scale octet + int64")

        def variable(name: str) -> Callable[[bytes], bytes]:
            head = bytes([codes[name]])
            return lambda raw: head + _U32.pack(len(raw)) + raw

        long_string, long_binary = variable("long-utf8-string"), variable("long-binary")
        table, sequence = bytes([codes["table"]]), variable("sequence")
        boolean, void = codes["boolean"], bytes([codes["void"]])
        datetime_code, uuid_code = bytes([codes["datetime"]]), bytes([codes["uuid"]])
        encoders: dict[type, _Encoder] = {
            type(None): lambda value, depth: void,
            bool: lambda value, depth: bytes([boolean, 1 if value else 0]),
            int: encode_int,
            Long: signed_long,
            float: fixed("double", "d"),
            decimal.Decimal: encode_decimal,
            str: lambda value, depth: long_string(value.encode("utf-8", "surrogateescape")),
            bytes: lambda value, depth: long_binary(bytes(value)),
            bytearray: lambda value, depth: long_binary(bytes(value)),
            memoryview: lambda value, depth: long_binary(bytes(value)),
            datetime.datetime: lambda value, depth: (
                datetime_code + _U64.pack(timestamp_seconds(value))
            ),
            uuid.UUID: lambda value, depth: uuid_code + value.bytes,
            dict: lambda value, depth: table + self.encode_table(value, depth + 1),
            list: lambda value, depth: sequence(self._encode_sequence(value, depth + 1)),
            tuple: lambda value, depth: sequence(self._encode_sequence(value, depth + 1)),
        }
        self._encoders = encoders

    # -- encoding ---------------------------------------------------------------------------

    def encode_table(self, table: Mapping[str, Any] | None, depth: int = 0) -> bytes:
        if not table:
            return b"\x00\x00\x00\x00"
        if depth > MAX_TABLE_DEPTH:
            raise syntax_error(f"field table nested deeper than {MAX_TABLE_DEPTH}")
        body = b"".join(
            encode_shortstr(key) + self.encode_value(value, depth) for key, value in table.items()
        )
        return _U32.pack(len(body)) + body

    def _encode_sequence(self, values: Sequence[Any], depth: int) -> bytes:
        if depth > MAX_TABLE_DEPTH:
            raise syntax_error(f"field sequence nested deeper than {MAX_TABLE_DEPTH}")
        return b"".join(self.encode_value(value, depth) for value in values)

    def encode_value(self, value: Any, depth: int = 0) -> bytes:
        """One typed value: its type code and its encoding."""
        encoder = self._encoders.get(value.__class__)
        if encoder is None:  # a subclass (IntEnum, OrderedDict, ...) or another Mapping
            kind = next((t for t in self._encoders if isinstance(value, t)), None)
            if kind is None and isinstance(value, Mapping):
                kind = dict
            if kind is None:
                raise syntax_error(f"no AMQP field type for a value of type {type(value).__name__}")
            encoder = self._encoders[kind]
        try:
            return encoder(value, depth)
        except struct.error as exc:
            raise syntax_error(f"field value {value!r}: {exc}") from None

    # -- decoding ---------------------------------------------------------------------------

    def decode_table(self, data: bytes, offset: int) -> tuple[dict[str, Any], int]:
        """The field table at ``offset`` and the offset after it."""
        try:
            return self._decode_table(data, offset, 0)
        except (struct.error, IndexError):
            raise syntax_error("truncated field table") from None

    def _decode_value(self, data: bytes, offset: int, depth: int) -> tuple[Any, int]:
        code = data[offset]
        decoder = self._decoders.get(code)
        if decoder is None:
            raise syntax_error(f"unknown field-table type code 0x{code:02x}")
        return decoder(data, offset + 1, depth)

    def _decode_table(self, data: bytes, offset: int, depth: int) -> tuple[dict[str, Any], int]:
        offset, end = container_bounds(data, offset, depth, "table")
        table: dict[str, Any] = {}
        while offset < end:
            key_end = offset + 1 + data[offset]
            key = data[offset + 1 : key_end].decode("utf-8", "surrogateescape")
            table[key], offset = self._decode_value(data, key_end, depth)
        if offset != end:
            raise syntax_error("field table length does not match its contents")
        return table, end

    def _decode_sequence(self, data: bytes, offset: int, depth: int) -> tuple[list[Any], int]:
        offset, end = container_bounds(data, offset, depth + 1, "sequence")
        values: list[Any] = []
        while offset < end:
            value, offset = self._decode_value(data, offset, depth + 1)
            values.append(value)
        if offset != end:
            raise syntax_error("field sequence length does not match its contents")
        return values, end

    def _decode_array(self, data: bytes, offset: int, depth: int) -> tuple[list[Any], int]:
        start, end = container_bounds(data, offset, depth + 1, "array")
        code = data[start]
        (count,) = _U32.unpack_from(data, start + 1)
        decoder = self._decoders.get(code)
        if decoder is None:
            raise syntax_error(f"unknown field-table type code 0x{code:02x} in an array")
        offset = start + 5
        # Every value but a void takes an octet at least: a count beyond the array's octets
        # is refused before any work (it also bounds a void array).
        if count > end - offset:
            raise syntax_error(f"field array of {count} values in {end - offset} octets")
        values: list[Any] = []
        for _ in range(count):
            value, offset = decoder(data, offset, depth + 1)
            values.append(value)
        if offset != end:
            raise syntax_error("field array length does not match its contents")
        return values, end

    def _decoder(self, t: FieldTableType) -> _Decoder:
        """The decoder of the values of type ``t``: (data, offset after the code, depth) ->
        (value, offset after the value)."""
        if t.datatype == "field-table":
            return lambda data, offset, depth: self._decode_table(data, offset, depth + 1)
        if t.datatype == "sequence":
            return self._decode_sequence
        if t.datatype == "array":
            return self._decode_array
        if t.length_width is not None:
            return _variable_decoder(t)
        return _fixed_decoder(t)


def _variable_decoder(t: FieldTableType) -> _Decoder:
    assert t.length_width is not None
    length = _LENGTHS[t.length_width]
    size = length.size
    text = None if t.datatype == "binary" else _text_encoding(t.name)

    def decode(data: bytes, offset: int, depth: int) -> tuple[Any, int]:
        start = offset + size
        end = start + length.unpack_from(data, offset)[0]
        if end > len(data):
            raise syntax_error(f"field-table {t.name} runs past the end of the frame")
        raw = bytes(data[start:end])
        return (raw if text is None else _text(raw, text)), end

    return decode


def _fixed_decoder(t: FieldTableType) -> _Decoder:
    width = t.width or 0
    if t.datatype == "decimal":
        fmt = struct.Struct(">Bi" if width == 5 else ">Bq")

        def decode_decimal(data: bytes, offset: int, depth: int) -> tuple[Any, int]:
            scale, unscaled = fmt.unpack_from(data, offset)
            return decimal.Decimal(unscaled).scaleb(-scale), offset + width

        return decode_decimal
    fixed = _INTEGER_CODES.get((t.datatype, width))
    if fixed is not None:
        number = struct.Struct(">" + fixed)
        return lambda data, offset, depth: (number.unpack_from(data, offset)[0], offset + width)

    def convert(raw: bytes) -> Any:
        if t.datatype == "void":
            return None
        if t.datatype == "char":
            return _text(raw, "iso8859-15" if width == 1 else "utf-32-be")
        if t.name == "datetime":
            try:
                return datetime_from_seconds(_U64.unpack(raw)[0])
            except OverflowError:
                raise syntax_error(f"datetime {raw.hex()} is out of range") from None
        if t.name == "uuid":
            return uuid.UUID(bytes=raw)
        return raw  # binary

    if t.datatype not in ("void", "char", "binary") and t.name not in ("datetime", "uuid"):
        raise ValueError(f"no decoding for field-table type {t}")

    def decode(data: bytes, offset: int, depth: int) -> tuple[Any, int]:
        end = offset + width
        if end > len(data):
            raise syntax_error(f"field-table {t.name} runs past the end of the frame")
        return convert(bytes(data[offset:end])), end

    return decode
