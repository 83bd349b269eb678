"""Every method of every spec (the 0-10 draft's too) survives encode -> decode with every
field drawn from its type."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import ALL_SPECS, KNOWN_SPECS, Method, errors
from tests.protocol.strategies import methods_of

ALL_METHODS = [
    pytest.param(spec.method(name), id=f"{spec.label}:{name}")
    for spec in KNOWN_SPECS
    for name in sorted(spec.methods)
]


@pytest.mark.parametrize("cls", ALL_METHODS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_method_round_trips_through_its_encoding(cls: type[Method], data: st.DataObject) -> None:
    method = data.draw(methods_of(cls))
    payload = method.encode()
    class_id, method_id = struct.unpack_from(">HH", payload)
    assert (class_id, method_id) == (cls.CLASS_ID, cls.METHOD_ID)
    assert cls.SPEC.method_by_id(class_id, method_id) is cls
    decoded, end = cls.decode(payload, 4)
    assert end == len(payload)
    assert decoded == method
    assert decoded.fields() == method.fields()


@pytest.mark.parametrize("cls", ALL_METHODS)
def test_method_defaults_encode_and_decode(cls: type[Method]) -> None:
    method = cls()
    decoded, end = cls.decode(method.encode(), 4)
    assert (decoded, end) == (method, len(method.encode()))


def _has_fields(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, Method) and bool(cls.DEFINITION.fields)


@pytest.mark.parametrize("cls", [p for p in ALL_METHODS if _has_fields(p.values[0])])
def test_truncated_arguments_are_a_syntax_error(cls: type[Method]) -> None:
    payload = cls().encode()
    for cut in range(4, len(payload)):
        with pytest.raises(errors.SyntaxError_):
            cls.decode(payload[:cut], 4)


def test_shortstr_over_255_bytes_is_a_syntax_error_on_encode() -> None:
    publish = ALL_SPECS[0].method("basic.publish")(routing_key="k" * 256)
    with pytest.raises(errors.SyntaxError_):
        publish.encode()


def test_out_of_range_integer_field_is_a_syntax_error_on_encode() -> None:
    qos = ALL_SPECS[0].method("basic.qos")(prefetch_count=2**16)
    with pytest.raises(errors.SyntaxError_):
        qos.encode()


def test_method_metadata_comes_from_the_spec() -> None:
    publish = ALL_SPECS[0].method("basic.publish")
    assert (publish.NAME, publish.CLASS_ID, publish.METHOD_ID) == ("basic.publish", 60, 40)
    assert publish.HAS_CONTENT and not publish.SYNCHRONOUS
    assert ALL_SPECS[0].method("queue.declare").SYNCHRONOUS
    assert ALL_SPECS[1].method("queue.declare")().fields()["no_wait"] is False  # 0-9's "nowait"
