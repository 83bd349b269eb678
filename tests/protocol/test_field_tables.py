"""Field tables and arrays: every value type round-trips; malformed tables are 502s."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import pytest
from hypothesis import given, settings

from amqp_protocol import errors, values
from tests.protocol.strategies import INT32, INT64, UTC, field_arrays, field_tables


def _round_trip(table: dict[str, Any]) -> dict[str, Any]:
    encoded = values.encode_table(table)
    decoded, end = values.decode_table(encoded, 0)
    assert end == len(encoded)
    return decoded


@settings(max_examples=300, deadline=None)
@given(field_tables)
def test_field_table_round_trips(table: dict[str, Any]) -> None:
    assert _round_trip(table) == table


@settings(max_examples=150, deadline=None)
@given(field_arrays)
def test_field_array_round_trips_inside_a_table(array: list[Any]) -> None:
    assert _round_trip({"array": array}) == {"array": array}


@pytest.mark.parametrize(
    ("value", "type_code"),
    [
        (True, b"t"),
        (False, b"t"),
        (INT32[0], b"I"),
        (INT32[1], b"I"),
        (INT32[0] - 1, b"l"),
        (INT32[1] + 1, b"l"),
        (INT64[0], b"l"),
        (INT64[1], b"l"),
        (1.5, b"d"),
        (decimal.Decimal("-123.45"), b"D"),
        ("grüße", b"S"),
        (b"\x00\xff", b"x"),
        (datetime.datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC), b"T"),
        ({"nested": {"deeper": [1, "two"]}}, b"F"),
        ([1, [2, [3]]], b"A"),
        (None, b"V"),
    ],
)
def test_each_value_type_has_its_type_code_and_round_trips(value: Any, type_code: bytes) -> None:
    assert values.encode_field_value(value)[:1] == type_code
    assert _round_trip({"k": value}) == {"k": value}


def test_nan_round_trips_as_nan() -> None:
    assert math.isnan(_round_trip({"k": math.nan})["k"])


def test_naive_datetime_is_taken_as_utc() -> None:
    naive = datetime.datetime(2020, 5, 17, 12, 0, 0)
    assert _round_trip({"k": naive}) == {"k": naive.replace(tzinfo=UTC)}


@pytest.mark.parametrize(
    ("code", "payload", "expected"),
    [
        (b"b", b"\xff", -1),
        (b"B", b"\xff", 255),
        (b"s", b"\xff\xfe", -2),
        (b"u", b"\xff\xfe", 65534),
        (b"i", b"\xff\xff\xff\xff", 2**32 - 1),
        (b"L", b"\xff" * 8, 2**64 - 1),
        (b"f", b"\x3f\xc0\x00\x00", 1.5),
        (b"S", b"\x00\x00\x00\x02\xff\xfe", b"\xff\xfe"),  # not UTF-8: kept as bytes
    ],
)
def test_types_other_clients_send_decode(code: bytes, payload: bytes, expected: Any) -> None:
    entry = b"\x01k" + code + payload
    table = values.U32.pack(len(entry)) + entry
    assert values.decode_table(table, 0) == ({"k": expected}, len(table))


@pytest.mark.parametrize(
    "value",
    [
        2**63,
        -(2**63) - 1,
        decimal.Decimal("NaN"),
        decimal.Decimal("1e-300"),
        decimal.Decimal(2**40),
        datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
        object(),
        {"k" * 256: 1},
    ],
    ids=repr,
)
def test_unencodable_value_is_a_syntax_error(value: Any) -> None:
    with pytest.raises(errors.SyntaxError_):
        values.encode_table({"k": value})


def test_self_containing_table_is_a_syntax_error_not_a_recursion_error() -> None:
    table: dict[str, Any] = {}
    table["self"] = table
    with pytest.raises(errors.SyntaxError_):
        values.encode_table(table)


@pytest.mark.parametrize(
    "encoded",
    [
        b"\x00\x00\x00\x03\x01kZ",  # unknown type code
        b"\x00\x00\x00\x05\x01kI\x00",  # int32 cut short
        b"\x00\x00\x00\x09\x01kS\x00\x00\x00\x09ab",  # long string past the table
        b"\x00\x00\x00\x10\x01kV",  # table length past the end
        b"\x00\x00\x00\x04\x01kI\x00\x00\x00\x01",  # value runs past the table length
        b"\x00\x00\x00\x02\x05k",  # key runs past the table
        b"\x00\x00",  # length cut short
        b"\x00\x00\x00\x0b\x01kT\xff\xff\xff\xff\xff\xff\xff\xff",  # timestamp out of range
    ],
)
def test_malformed_table_is_a_syntax_error(encoded: bytes) -> None:
    with pytest.raises(errors.SyntaxError_):
        values.decode_table(encoded, 0)


def test_nesting_deeper_than_the_limit_is_refused_on_decode() -> None:
    depth = values.MAX_TABLE_DEPTH + 2
    encoded = b"\x00\x00\x00\x00"
    for _ in range(depth):
        entry = b"\x01kF" + encoded
        encoded = values.U32.pack(len(entry)) + entry
    with pytest.raises(errors.SyntaxError_):
        values.decode_table(encoded, 0)
