"""The AMQP 1.0 type system: each encoding's bytes (the spec's format codes, compact forms
first), round trips, and clear errors on malformed input."""

from __future__ import annotations

import uuid

import pytest

from amqp_protocol.amqp10.types import (
    AMQP10DecodeError,
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    decode,
    encode,
)

ENCODINGS = [
    (None, "40"),
    (True, "41"),
    (False, "42"),
    (UByte(7), "5007"),
    (UShort(258), "600102"),
    (UInt(0), "43"),
    (UInt(7), "5207"),
    (UInt(70000), "7000011170"),
    (ULong(0), "44"),
    (ULong(9), "5309"),
    (ULong(2**40), "800000010000000000"),
    (Byte(-1), "51ff"),
    (Short(-2), "61fffe"),
    (Int(-3), "54fd"),
    (Int(300), "710000012c"),
    (5, "5405"),
    (2**40, "810000010000000000"),
    (Long(-1), "55ff"),
    (Float(1.5), "723fc00000"),
    (1.5, "823ff8000000000000"),
    (Decimal32(b"\x01\x02\x03\x04"), "7401020304"),
    (Decimal64(bytes(8)), "84" + "00" * 8),
    (Decimal128(bytes(16)), "94" + "00" * 16),
    (Char("é"), "73000000e9"),
    (Timestamp(1000), "8300000000000003e8"),
    (uuid.UUID(int=1), "98" + "00" * 15 + "01"),
    (b"ab", "a0026162"),
    (b"x" * 256, "b000000100" + "78" * 256),
    ("é", "a102c3a9"),
    (Symbol("ab"), "a3026162"),
    ([], "45"),
    ([1, None], "c00402540140"),
    ({Symbol("k"): "v"}, "c10702a3016ba10176"),
    (Described(ULong(0x77), "v"), "005377a10176"),
    (Array(0x71, [1, 2]), "e00a027100000001" + "00000002"),
]


@pytest.mark.parametrize(("value", "hex_bytes"), ENCODINGS)
def test_each_value_has_its_smallest_encoding_and_decodes_back(
    value: object, hex_bytes: str
) -> None:
    assert encode(value).hex() == hex_bytes
    assert decode(bytes.fromhex(hex_bytes)) == value


def test_large_lists_and_maps_take_the_32_bit_forms() -> None:
    big = list(range(300))
    assert encode(big)[0] == 0xD0
    assert decode(encode(big)) == big
    mapping = {f"k{i}": i for i in range(200)}
    assert encode(mapping)[0] == 0xD1
    assert decode(encode(mapping)) == mapping


def test_decoding_reads_from_a_memoryview() -> None:
    data = memoryview(b"junk" + encode({Symbol("a"): [b"x", "y"]}))[4:]
    assert decode(data) == {"a": [b"x", "y"]}


@pytest.mark.parametrize(
    ("hex_bytes", "complaint"),
    [
        ("", "data ends"),
        ("ff", "unknown AMQP 1.0 format code 0xff"),
        ("a105ab", "runs past the end"),
        ("c1030154", "runs past the end"),
        ("a102c328", "not valid"),
        ("4040", "1 bytes after the value"),
        ("c00401a10561", "declares 4 bytes, its items take 8"),
        ("e0050271000000", "runs past the end"),
        ("c1050354015402", "odd count of 3"),
    ],
)
def test_malformed_input_is_refused_saying_why(hex_bytes: str, complaint: str) -> None:
    with pytest.raises(AMQP10DecodeError, match=complaint):
        decode(bytes.fromhex(hex_bytes))


def test_a_value_of_no_amqp_type_is_refused_naming_its_type() -> None:
    with pytest.raises(TypeError, match="no AMQP 1.0 type for a value of type object"):
        encode(object())


def test_an_unsigned_value_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        encode(UByte(256))
