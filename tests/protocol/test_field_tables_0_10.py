"""Field tables with the 0-10 draft's type codes: every code the XML defines decodes from
its width or length field; Python values round-trip; what is malformed is a 502."""

from __future__ import annotations

import datetime
import decimal
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings

from amqp_protocol import SPEC_0_10, errors, values
from amqp_protocol.generated.spec_0_10 import FIELD_TABLE_TYPES, decode_table, encode_table
from amqp_protocol.spec import FieldTableType
from tests.protocol.strategies import UTC, field_tables_0_10

_CODES = {t.name: t.code for t in FIELD_TABLE_TYPES}
_LENGTH_FORMATS = {1: ">B", 2: ">H", 4: ">I"}


def _table(*entries: tuple[str, bytes]) -> bytes:
    """A table of (key, type code + value bytes) entries."""
    body = b"".join(values.encode_shortstr(key) + value for key, value in entries)
    return struct.pack(">I", len(body)) + body


def _text_codec(name: str) -> str:
    return next(
        (
            codec
            for key, codec in (("utf8", "utf-8"), ("utf16", "utf-16-be"), ("utf32", "utf-32-be"))
            if key in name
        ),
        "iso8859-15",
    )


def _sample(t: FieldTableType) -> tuple[bytes, Any]:
    """The wire bytes of a value of type ``t`` (after its code) and the value they mean,
    built from the type's width, length field and datatype as the XML states them."""
    if t.datatype == "field-table":
        return _table(("k", bytes([_CODES["boolean"], 1]))), {"k": True}
    if t.datatype == "sequence":
        items = bytes([_CODES["boolean"], 0, _CODES["void"]])
        return struct.pack(">I", len(items)) + items, [False, None]
    if t.datatype == "array":
        items = bytes([_CODES["signed-int"]]) + struct.pack(">Iii", 2, 1, -1)
        return struct.pack(">I", len(items)) + items, [1, -1]
    if t.length_width is not None:
        text = "héllo €"
        raw = b"\x00\xffbinary" if t.datatype == "binary" else text.encode(_text_codec(t.name))
        length = struct.pack(_LENGTH_FORMATS[t.length_width], len(raw))
        return length + raw, raw if t.datatype == "binary" else text
    width = t.width or 0
    if t.name == "datetime":
        when = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
        return struct.pack(">Q", int(when.timestamp())), when
    if t.name == "uuid":
        value = uuid.UUID("12345678-1234-5678-1234-567812345678")
        return value.bytes, value
    if t.datatype == "char":
        return "€".encode(_text_codec("utf32" if width == 4 else "")), "€"
    raw = bytes((0x81 + i) % 256 for i in range(width))
    if t.datatype == "signed-integer":
        return raw, int.from_bytes(raw, "big", signed=True)
    if t.datatype == "unsigned-integer":
        return raw, int.from_bytes(raw, "big")
    if t.datatype == "ieee-float":
        return struct.pack(">f" if width == 4 else ">d", -2.5), -2.5
    if t.datatype == "boolean":
        return b"\x01", True
    if t.datatype == "decimal":
        unscaled = int.from_bytes(raw[1:], "big", signed=True)
        return b"\x03" + raw[1:], decimal.Decimal(unscaled).scaleb(-3)
    if t.datatype == "void":
        return b"", None
    assert t.datatype == "binary", t
    return raw, raw


@pytest.mark.parametrize("t", FIELD_TABLE_TYPES, ids=lambda t: f"{t.code:#04x}-{t.name}")
def test_every_type_code_of_the_draft_decodes_by_its_width(t: FieldTableType) -> None:
    raw, expected = _sample(t)
    wire = _table(("a", bytes([t.code]) + raw), ("b", bytes([_CODES["boolean"], 1])))
    decoded, end = decode_table(wire, 0)
    assert end == len(wire)
    assert decoded == {"a": expected, "b": True}
    # What it decoded to encodes (with the code of its Python type) back to the same value.
    assert decode_table(encode_table(decoded), 0)[0] == decoded


@settings(max_examples=300, deadline=None)
@given(field_tables_0_10)
def test_field_table_with_the_draft_codes_round_trips(table: dict[str, Any]) -> None:
    encoded = encode_table(table)
    assert decode_table(encoded, 0) == (table, len(encoded))


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (True, "boolean"),
        (7, "signed-int"),
        (-(2**31), "signed-int"),
        (2**31, "signed-long"),
        (values.Long(7), "signed-long"),
        (2**63, "unsigned-long"),
        (1.5, "double"),
        (decimal.Decimal("1.25"), "decimal"),
        (decimal.Decimal(2**40).scaleb(-2), "long-decimal"),
        ("text", "long-utf8-string"),
        (b"\x00\x01", "long-binary"),
        (datetime.datetime(2024, 1, 1, tzinfo=UTC), "datetime"),
        (uuid.UUID(int=1), "uuid"),
        ({"k": 1}, "table"),
        ([1, "x"], "sequence"),
        (None, "void"),
    ],
)
def test_python_types_encode_with_the_draft_codes(value: Any, name: str) -> None:
    encoded = encode_table({"v": value})
    assert encoded[6] == _CODES[name]  # after the table's length and the key "v"
    assert decode_table(encoded, 0)[0] == {"v": value}


def test_the_draft_codes_replace_0_9s_type_letters() -> None:
    assert encode_table({"n": 1}) == _table(("n", bytes([0x21]) + struct.pack(">i", 1)))
    assert values.encode_table({"n": 1}) == _table(("n", b"I" + struct.pack(">i", 1)))
    # A 0-9 long string ('S', 0x53) is no code of the draft.
    with pytest.raises(errors.SyntaxError_, match="0x53"):
        decode_table(values.encode_table({"s": "x"}), 0)


def test_a_methods_table_uses_its_versions_codes() -> None:
    declare = SPEC_0_10.method("queue.declare")(queue="q", arguments={"x-max-length": 10})
    assert bytes([_CODES["signed-int"]]) + struct.pack(">i", 10) in declare.encode()
    decoded, _ = type(declare).decode(declare.encode(), 4)
    assert decoded == declare


@pytest.mark.parametrize("code", [0x03, 0x53, 0xB0, 0xE0, 0xFF])
def test_a_type_code_the_draft_does_not_define_is_a_syntax_error(code: int) -> None:
    with pytest.raises(errors.SyntaxError_, match=f"{code:#04x}"):
        decode_table(_table(("k", bytes([code, 0, 0, 0, 0]))), 0)


def test_a_truncated_table_is_a_syntax_error_wherever_it_is_cut() -> None:
    wire = encode_table(
        {"s": "text", "n": 2**40, "u": uuid.UUID(int=5), "l": [1, {"t": True}], "d": 1.0}
    )
    for cut in range(len(wire)):
        with pytest.raises(errors.SyntaxError_):
            decode_table(wire[:cut], 0)


def test_an_array_counting_more_values_than_its_octets_is_a_syntax_error() -> None:
    items = bytes([_CODES["void"]]) + struct.pack(">I", 2**32 - 1)
    with pytest.raises(errors.SyntaxError_, match="array"):
        decode_table(
            _table(("a", bytes([_CODES["array"]]) + struct.pack(">I", len(items)) + items)), 0
        )


def test_a_value_running_past_its_table_is_a_syntax_error() -> None:
    inner = bytes([_CODES["signed-long"]]) + struct.pack(">q", 1)
    wire = values.encode_shortstr("k") + inner
    with pytest.raises(errors.SyntaxError_):
        decode_table(struct.pack(">I", len(wire) - 4) + wire, 0)


def test_an_integer_beyond_64_bits_is_a_syntax_error_on_encode() -> None:
    with pytest.raises(errors.SyntaxError_):
        encode_table({"n": 2**64})


def test_an_undecodable_string_decodes_to_its_bytes() -> None:
    raw = b"\xff\xfe\xfd"
    wire = _table(("s", bytes([_CODES["long-utf8-string"]]) + struct.pack(">I", 3) + raw))
    assert decode_table(wire, 0)[0] == {"s": raw}


def test_nesting_deeper_than_the_limit_is_a_syntax_error() -> None:
    table: dict[str, Any] = {}
    for _ in range(values.MAX_TABLE_DEPTH + 2):
        table = {"t": table or {"x": 1}}
    with pytest.raises(errors.SyntaxError_, match="deeper"):
        encode_table(table)
