"""Every method of every spec (the 0-10 draft's too) survives encode -> decode with every
field drawn from its type."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import ALL_SPECS, KNOWN_SPECS, SPEC_0_9, Method, errors
from amqp_protocol.generated import spec_0_9
from tests.protocol.strategies import methods_of

#: Every method class of every version, by "<version>:<method name>".
METHOD_CLASSES = {
    f"{spec.label}:{name}": spec.method(name)
    for spec in KNOWN_SPECS
    for name in sorted(spec.methods)
}
ALL_METHODS = [pytest.param(cls, id=key) for key, cls in METHOD_CLASSES.items()]
WITH_ARGUMENTS = [
    pytest.param(cls, id=key) for key, cls in METHOD_CLASSES.items() if cls.DEFINITION.fields
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


@pytest.mark.parametrize("cls", WITH_ARGUMENTS)
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
    declare = SPEC_0_9.method("queue.declare")()
    assert isinstance(declare, spec_0_9.QueueDeclare)
    assert declare.no_wait is False  # 0-9's "nowait"
