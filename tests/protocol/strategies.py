"""Hypothesis strategies for AMQP values, built from the spec's field definitions.

Every strategy yields values that survive an encode/decode round trip unchanged (for example
whole-second, UTC datetimes), so tests can compare with ``==``.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from hypothesis import strategies as st

from amqp_protocol import Method, Properties, Spec, values
from amqp_protocol.spec import FieldDef

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UTC = datetime.timezone.utc


def _fits_shortstr(text: str) -> bool:
    return len(text.encode("utf-8", "surrogateescape")) <= 255


#: Short strings: any text that fits 255 UTF-8 bytes, and raw bytes that are not UTF-8
#: (decoded with surrogateescape, as the codec does, so they re-encode to the same bytes).
shortstrs = st.one_of(
    st.text(max_size=80).filter(_fits_shortstr),
    st.binary(max_size=255).map(lambda raw: raw.decode("utf-8", "surrogateescape")),
)


def _edges(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers in [low, high] with the edges (and their neighbours) drawn often."""
    edges = sorted(e for e in {low, low + 1, -1, 0, 1, high - 1, high} if low <= e <= high)
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


table_ints = st.one_of(
    _edges(*INT32), _edges(*INT64), st.sampled_from([INT32[0] - 1, INT32[1] + 1])
)
decimals = st.builds(
    lambda unscaled, scale: decimal.Decimal(unscaled).scaleb(-scale),
    _edges(*INT32),
    st.integers(0, 255),
)
datetimes = st.datetimes(
    min_value=datetime.datetime(1970, 1, 1),
    max_value=datetime.datetime(9999, 12, 31, 23, 59, 59),
    timezones=st.just(UTC),
).map(lambda d: d.replace(microsecond=0))

scalar_field_values = st.one_of(
    st.none(),
    st.booleans(),
    table_ints,
    st.floats(allow_nan=False),
    decimals,
    st.text(max_size=40),
    st.binary(max_size=40),
    datetimes,
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(shortstrs, children, max_size=5),
    )


field_values = st.recursive(scalar_field_values, _containers, max_leaves=10)
#: Field tables of the 0-10 draft: its codes carry UUIDs as well.
field_tables_0_10 = st.dictionaries(
    shortstrs,
    st.recursive(scalar_field_values | st.uuids(), _containers, max_leaves=10),
    max_size=8,
)
field_tables = st.dictionaries(shortstrs, field_values, max_size=8)
field_arrays = st.lists(field_values, max_size=8)

_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "bit": st.booleans(),
    "octet": _edges(0, 2**8 - 1),
    "short": _edges(0, 2**16 - 1),
    "long": _edges(0, 2**32 - 1),
    "longlong": _edges(0, 2**64 - 1),
    "timestamp": _edges(0, 2**64 - 1),
    "shortstr": shortstrs,
    "longstr": st.binary(max_size=300),
    "table": field_tables,
    "content": st.builds(values.Content, st.binary(max_size=300), st.booleans()),
    # The 0-10 draft's types.
    "uuid": st.uuids(),
    "rfc1982-long-set": st.lists(st.tuples(_edges(0, 2**32 - 1), _edges(0, 2**32 - 1))),
}


def for_field(fdef: FieldDef) -> st.SearchStrategy[Any]:
    return _BY_TYPE[fdef.type]


def methods_of(cls: type[Method]) -> st.SearchStrategy[Method]:
    """Instances of one generated method class with every field drawn from its type."""
    return st.builds(cls, **{f.name: for_field(f) for f in cls.DEFINITION.fields})


def all_methods(spec: Spec) -> st.SearchStrategy[Method]:
    return st.sampled_from(sorted(spec.methods.values(), key=lambda c: c.NAME)).flatmap(methods_of)


def properties_of(cls: type[Properties]) -> st.SearchStrategy[Properties]:
    """Property sets where each property is absent (None) or drawn from its type."""
    return st.builds(cls, **{p.name: st.none() | for_field(p) for p in cls.property_defs})
