"""The publishers' fast encoding (encoded method payloads cached per routing key, property
lists encoded without a body size, all frames joined once) writes exactly the bytes of the
protocol layer's one-message ``send_content``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_protocol import SPEC_0_8, SPEC_0_9_1, Connection, Spec

BasicProperties = SPEC_0_9_1.properties("basic")

properties = st.builds(
    BasicProperties,
    content_type=st.none() | st.text(max_size=20),
    delivery_mode=st.none() | st.integers(1, 2),
    message_id=st.none() | st.text(max_size=40),
    headers=st.none() | st.dictionaries(st.text(max_size=8), st.integers(-(2**31), 2**31 - 1)),
    timestamp=st.none() | st.integers(0, 2**40),
)
messages = st.lists(
    st.tuples(st.sampled_from(["", "a", "queue.1"]), st.binary(max_size=300), properties),
    max_size=12,
)


def client(spec: Spec, frame_max: int) -> Connection:
    conn = Connection(role="client", spec=spec)
    conn.frame_max = frame_max
    return conn


@settings(max_examples=200, deadline=None)
@given(messages, st.sampled_from([0, 4096, 4096 + 100, 131072]), st.booleans())
def test_encoded_contents_are_the_frames_of_send_content_joined(
    batch: list[tuple[str, bytes, object]], frame_max: int, mandatory: bool
) -> None:
    conn = client(SPEC_0_9_1, frame_max)
    publish = SPEC_0_9_1.method("basic.publish")
    methods = {
        key: publish(exchange="x", routing_key=key, mandatory=mandatory) for key, _, _ in batch
    }
    payloads = {key: method.encode() for key, method in methods.items()}
    expected = b"".join(
        conn.send_content(5, methods[key], props, body)  # type: ignore[arg-type]
        for key, body, props in batch
    )
    encoded = conn.send_encoded_contents(
        5,
        publish.CLASS_ID,
        [(payloads[key], props.encode_list(), body) for key, body, props in batch],  # type: ignore[attr-defined]
    )
    assert encoded == expected


def test_property_list_is_the_content_header_after_class_weight_and_size() -> None:
    for spec in (SPEC_0_9_1, SPEC_0_8):
        for props in (
            spec.properties("basic")(),
            spec.properties("basic")(delivery_mode=2, headers={"a": 1}, message_id="m"),
        ):
            assert props.encode_header(1234)[12:] == props.encode_list()
