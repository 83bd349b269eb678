"""Content properties of every content class of every spec, and the flags-word rules."""

from __future__ import annotations

import importlib.util
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import ALL_SPECS, KNOWN_SPECS, Properties, errors
from amqp_protocol.codegen.modules import version_module
from amqp_protocol.codegen.xml_spec import parse_spec
from tests.protocol.strategies import properties_of, shortstrs

ALL_PROPERTY_CLASSES = [
    pytest.param(spec.properties(cdef.name), id=f"{spec.label}:{cdef.name}")
    for spec in KNOWN_SPECS
    for cdef in spec.classes.values()
    if cdef.properties
]
BASIC = ALL_SPECS[0].properties("basic")


def _decode_header(cls: type[Properties], header: bytes) -> tuple[int, int, Properties]:
    class_id, _weight, body_size = struct.unpack_from(">HHQ", header)
    return class_id, body_size, cls.decode(header, 12)


def test_every_content_class_of_every_spec_has_properties() -> None:
    names = {p.id for p in ALL_PROPERTY_CLASSES}
    assert {"0-9-1:basic", "0-9:basic", "0-9:file", "0-9:stream", "0-9:tunnel"} <= names
    assert {"0-8:basic", "0-8:file", "0-8:stream", "0-8:tunnel"} <= names
    assert {"0-10:basic", "0-10:file", "0-10:stream", "0-10:tunnel"} <= names


@pytest.mark.parametrize("cls", ALL_PROPERTY_CLASSES)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), body_size=st.integers(0, 2**64 - 1))
def test_properties_round_trip_through_a_content_header(
    cls: type[Properties], data: st.DataObject, body_size: int
) -> None:
    props = data.draw(properties_of(cls))
    assert _decode_header(cls, props.encode_header(body_size)) == (cls.class_id, body_size, props)


def test_absent_properties_are_none_and_cost_no_bytes() -> None:
    header = BASIC().encode_header(5)
    assert header == struct.pack(">HHQH", 60, 0, 5, 0)
    assert BASIC.decode(header, 12).fields() == dict.fromkeys(BASIC.field_names)


def test_first_property_is_bit_15_of_the_flags_word() -> None:
    header = BASIC(content_type="text/plain").encode_header(0)
    assert header[12:14] == b"\x80\x00"
    assert header[14:] == b"\x0atext/plain"


def test_unknown_property_name_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        BASIC(no_such_property=1)


@pytest.mark.parametrize(
    ("props", "exception"),
    [
        ({"content_type": "x" * 256}, errors.SyntaxError_),
        ({"delivery_mode": 256}, errors.SyntaxError_),
        ({"timestamp": -1}, errors.SyntaxError_),
        ({"headers": {"k": object()}}, errors.SyntaxError_),
    ],
)
def test_unencodable_property_is_a_syntax_error(props: dict, exception: type) -> None:
    with pytest.raises(exception):
        BASIC(**props).encode_header(0)


def test_continuation_word_of_zeros_after_the_first_is_accepted() -> None:
    # A peer may send a continuation word even when no later flag is set.
    header = struct.pack(">HHQHH", 60, 0, 0, 0x8001, 0) + b"\x01a"
    assert _decode_header(BASIC, header)[2] == BASIC(content_type="a")


@pytest.mark.parametrize(
    "flags",
    [struct.pack(">H", 0x0002), struct.pack(">HH", 0x0001, 0x8000)],
    ids=["fifteenth bit of basic", "second word"],
)
def test_flag_for_a_property_the_class_lacks_is_a_syntax_error(flags: bytes) -> None:
    with pytest.raises(errors.SyntaxError_):
        BASIC.decode(struct.pack(">HHQ", 60, 0, 0) + flags + b"\x00" * 8, 12)


@pytest.mark.parametrize(
    "header",
    [
        struct.pack(">HHQ", 60, 0, 0) + b"\x80",  # flags word cut short
        struct.pack(">HHQH", 60, 0, 0, 0x8000) + b"\x05ab",  # shortstr cut short
        struct.pack(">HHQH", 60, 0, 0, 0x0001),  # continuation promised, not sent
        struct.pack(">HHQH", 60, 0, 0, 0x1000) + b"\x02\x00",  # a stray byte after
        struct.pack(">HHQH", 60, 0, 0, 0x2000) + b"\x00\x00\x00\x09\x01kV",  # table too long
    ],
)
def test_malformed_content_header_is_a_syntax_error(header: bytes) -> None:
    with pytest.raises(errors.SyntaxError_):
        BASIC.decode(header, 12)


# A class of 20 properties (no spec has more than 15) exercises the continuation flag.
_WIDE_XML = b"""<amqp major="0" minor="9" revision="1">
<domain name="shortstr" type="shortstr"/><domain name="table" type="table"/>
<domain name="octet" type="octet"/>
<class name="wide" index="200">%s</class></amqp>""" % b"".join(
    b'<field name="p%d" domain="%s"/>' % (i, (b"shortstr", b"table", b"octet")[i % 3])
    for i in range(20)
)


def _generated_class(xml: bytes, name: str) -> type[Properties]:
    """The properties class ``name`` of the module the generator writes for ``xml``,
    written to a temporary file and imported from there."""
    source = version_module(parse_spec(xml), ("wide.xml",))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wide_spec.py"
        path.write_text(source)
        module_spec = importlib.util.spec_from_file_location("wide_spec", path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    cls: type[Properties] = getattr(module, name)
    return cls


WIDE = _generated_class(_WIDE_XML, "WideProperties")


_SMALL_TABLES = st.dictionaries(shortstrs, st.integers(-5, 5), max_size=2)


@settings(max_examples=100, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            f"p{i}": (shortstrs, _SMALL_TABLES, st.integers(0, 255))[i % 3] for i in range(20)
        },
    )
)
def test_more_than_15_properties_use_a_continuation_word(present: dict) -> None:
    props = WIDE(**present)
    header = props.encode_header(0)
    (first_word,) = struct.unpack_from(">H", header, 12)
    later = any(f"p{i}" in present for i in range(15, 20))
    assert bool(first_word & 1) == later
    if later:
        (second_word,) = struct.unpack_from(">H", header, 14)
        assert second_word & ~0xF800 == 0  # p15..p19 are bits 15..11 of the second word
    assert _decode_header(WIDE, header)[2] == props


def test_sixteenth_property_is_bit_15_of_the_second_word() -> None:
    header = WIDE(p15="x").encode_header(0)
    assert header[12:16] == b"\x00\x01\x80\x00"
    assert header[16:] == b"\x01x"
