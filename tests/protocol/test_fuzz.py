"""Fuzzing the server-role Connection with random and mutated frames (tracker issue 9).

Whatever bytes arrive, ``Connection.receive_data`` either returns events or raises an
``errors.AMQPError`` whose reply code is one the spec defines; no other exception, no hang.

The default run is short. For a long run, raise the example count through the environment::

    AMQP_FUZZ_EXAMPLES=200000 .venv/bin/python -m pytest tests/protocol/test_fuzz.py -q \
        -p no:cacheprovider --timeout=0
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqp_protocol import ALL_SPECS, SPEC_0_9_1, SPEC_0_10, Connection, errors
from amqp_protocol import frames as fr
from tests.protocol.strategies import all_methods, properties_of

EXAMPLES = int(os.environ.get("AMQP_FUZZ_EXAMPLES", "300"))
settings.register_profile(
    "fuzz",
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("fuzz")

#: Reply codes of the specs' error constants.
SPEC_REPLY_CODES = frozenset(
    value
    for spec in ALL_SPECS
    for value, kind in spec.constants.values()
    if kind in ("hard-error", "soft-error")
)


@st.composite
def valid_frames(draw: st.DrawFn) -> bytes:
    """One well-formed frame (method, content, heartbeat) of a 0-9-1 client."""
    sender = Connection("client", SPEC_0_9_1)
    channel = draw(st.sampled_from([0, 1, 2]))
    kind = draw(st.sampled_from(["method", "content", "heartbeat"]))
    if kind == "heartbeat":
        return sender.send_heartbeat()
    method = draw(all_methods(SPEC_0_9_1))
    if kind == "content" or method.HAS_CONTENT:
        props = draw(properties_of(SPEC_0_9_1.properties("basic")))
        return sender.send_content(channel, method, props, draw(st.binary(max_size=64)))
    return sender.send_method(channel, method)


@st.composite
def mutated(draw: st.DrawFn, frames: st.SearchStrategy[bytes]) -> bytes:
    """A frame with bytes flipped, inserted, deleted or the end cut off."""
    data = bytearray(draw(frames))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        where = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[where] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and data:
            del data[where]
        elif op == "truncate":
            del data[where:]
    return bytes(data)


def _random_frame(payload: bytes, frame_type: int, channel: int) -> bytes:
    return fr.FRAME_HEADER.pack(frame_type, channel, len(payload)) + payload + b"\xce"


random_frames = st.builds(
    _random_frame, st.binary(max_size=64), st.integers(1, 8), st.sampled_from([0, 1, 2, 65535])
)
streams = st.lists(
    st.one_of(valid_frames(), mutated(valid_frames()), random_frames, st.binary(max_size=32)),
    min_size=1,
    max_size=8,
)


def _server() -> Connection:
    server = Connection("server", frame_max=fr.FRAME_MIN_SIZE)
    opener = Connection("client", SPEC_0_9_1)
    server.receive_data(
        opener.initiate() + opener.send_method(1, SPEC_0_9_1.method("channel.open")())
    )
    return server


@FUZZ
@given(chunks=streams)
def test_any_bytes_give_events_or_an_amqp_error_with_a_spec_reply_code(chunks: list[bytes]) -> None:
    server = _server()
    for chunk in chunks:
        try:
            server.receive_data(chunk)
        except errors.AMQPError as err:
            assert err.reply_code in SPEC_REPLY_CODES, err
            assert isinstance(err.events, list)  # type: ignore[attr-defined]
            return


@FUZZ
@given(greeting=st.binary(max_size=16) | st.just(b"AMQP").map(lambda b: b + b"\x00\x00\x09\x01"))
def test_any_greeting_gives_a_header_event_or_a_refusal(greeting: bytes) -> None:
    server = Connection("server")
    try:
        server.receive_data(greeting)
    except errors.AMQPError as err:
        assert err.reply_code in SPEC_REPLY_CODES, err


# -- the 0-10 draft: its request and response frames, its field-table codes ---------------------

#: Reply codes of the draft's error constants.
DRAFT_REPLY_CODES = frozenset(
    value for value, kind in SPEC_0_10.constants.values() if kind in ("hard-error", "soft-error")
)
_IDS = st.integers(0, 2**64 - 1)


@st.composite
def draft_frames(draw: st.DrawFn) -> bytes:
    """One well-formed frame of a 0-10 draft client: a method in a method, request or
    response frame."""
    sender = Connection("client", SPEC_0_10)
    channel = draw(st.sampled_from([0, 1, 2]))
    method = draw(all_methods(SPEC_0_10))
    kind = draw(st.sampled_from(["method", "request", "response"]))
    if kind == "request":
        return sender.send_request(channel, method, draw(_IDS), draw(_IDS))
    if kind == "response":
        return sender.send_response(channel, method, draw(_IDS), draw(_IDS), 0)
    return sender.send_method(channel, method)


draft_streams = st.lists(
    st.one_of(
        draft_frames(),
        mutated(draft_frames()),
        st.builds(
            _random_frame, st.binary(max_size=64), st.integers(1, 11), st.sampled_from([0, 1, 2])
        ),
        st.binary(max_size=32),
    ),
    min_size=1,
    max_size=8,
)


@FUZZ
@given(chunks=draft_streams)
def test_any_bytes_on_a_0_10_connection_give_events_or_a_draft_reply_code(
    chunks: list[bytes],
) -> None:
    server = Connection("server", SPEC_0_10, frame_max=fr.FRAME_MIN_SIZE)
    opener = Connection("client", SPEC_0_10)
    server.receive_data(
        opener.initiate() + opener.send_method(1, SPEC_0_10.method("session.open")())
    )
    for chunk in chunks:
        try:
            server.receive_data(chunk)
        except errors.AMQPError as err:
            assert err.reply_code in DRAFT_REPLY_CODES, err
            return
