"""Codec speed: whole messages (method + content header + 100-byte body frames) and field
tables, encoded and decoded by our protocol layer and by pamqp on the same values.

Messages carry nine properties; a delivery is measured with none as well (what a consumer
mostly receives). Ours goes through the sans-IO ``Connection`` (``send_content`` /
``receive_data``, so decoding includes frame parsing and content assembly); pamqp through
``pamqp.frame.marshal`` / ``unmarshal`` of the three frames.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from typing import Any

from pamqp import body as pamqp_body
from pamqp import commands as pamqp_commands
from pamqp import decode as pamqp_decode
from pamqp import encode as pamqp_encode
from pamqp import frame as pamqp_frame
from pamqp import header as pamqp_header

from amqp_protocol import SPEC_0_9_1, Connection, events, values
from benchmarks.common import Row, compare, min_seconds, row

CHANNEL = 1
BODY = bytes(range(100))
PROPERTIES: dict[str, Any] = {
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "headers": {"x-retries": 3, "source": "orders-service", "traced": True},
    "delivery_mode": 2,
    "priority": 5,
    "correlation_id": "c0ffee-0001",
    "message_id": "msg-000000001",
    "timestamp": 1_700_000_000,
    "app_id": "bench",
}
PUBLISH: dict[str, Any] = {
    "exchange": "amq.topic",
    "routing_key": "orders.eu.created",
    "mandatory": False,
}
DELIVER: dict[str, Any] = {
    "consumer_tag": "amq.ctag-0123456789abcdef",
    "delivery_tag": 123_456,
    "redelivered": False,
    "exchange": "amq.topic",
    "routing_key": "orders.eu.created",
}
TABLE: dict[str, Any] = {
    "x-match": "all",
    "x-message-ttl": 60_000,
    "x-max-length": 1_000_000,
    "x-expires": 3_600_000,
    "x-dead-letter-exchange": "dlx",
    "x-dead-letter-routing-key": "dead.letters",
    "x-queue-type": "classic",
    "x-single-active-consumer": False,
    "durable": True,
    "big": 2**40,
    "negative": -12345,
    "ratio": 0.5,
    "price": decimal.Decimal("12.34"),
    "created": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    "nothing": None,
    "tags": ["a", "b", 3],
    "nested": {"k": "v", "n": 1},
    "empty": "",
    "unicode": "grüße",
    "long-text": "x" * 64,
}


def _ours_message(
    name: str, fields: dict[str, Any], receiver_role: str, properties: dict[str, Any]
) -> tuple[Callable[[], bytes], Callable[[], object]]:
    """(encode, decode) of one whole message through our Connection, channel 1 open."""
    method = SPEC_0_9_1.method(name)(**fields)
    props = SPEC_0_9_1.properties("basic")(**properties)
    channel_open = SPEC_0_9_1.method("channel.open")()
    if receiver_role == "server":
        sender = Connection("client", SPEC_0_9_1)
        receiver = Connection("server", supported=[SPEC_0_9_1])
        receiver.receive_data(sender.initiate() + sender.send_method(CHANNEL, channel_open))
    else:
        sender = Connection("server", supported=[SPEC_0_9_1])
        sender.receive_data(SPEC_0_9_1.protocol_header)
        receiver = Connection("client", SPEC_0_9_1)
        receiver.send_method(CHANNEL, channel_open)
    wire = sender.send_content(CHANNEL, method, props, BODY)
    received = receiver.receive_data(wire)
    expected = events.ContentReceived(CHANNEL, method, props, BODY)
    assert received == [expected], (received, expected)

    def encode() -> bytes:
        return sender.send_content(CHANNEL, method, props, BODY)

    def decode() -> object:
        return receiver.receive_data(wire)

    return encode, decode


def _pamqp_message(
    command: Any, properties: dict[str, Any]
) -> tuple[Callable[[], bytes], Callable[[], object]]:
    if "timestamp" in properties:
        moment = datetime.datetime.fromtimestamp(properties["timestamp"])
        properties = {**properties, "timestamp": moment}
    props = pamqp_commands.Basic.Properties(**properties)
    content_header = pamqp_header.ContentHeader(0, len(BODY), props)
    content_body = pamqp_body.ContentBody(BODY)
    marshal, unmarshal = pamqp_frame.marshal, pamqp_frame.unmarshal

    def encode() -> bytes:
        return b"".join(
            (
                marshal(command, CHANNEL),
                marshal(content_header, CHANNEL),
                marshal(content_body, CHANNEL),
            )
        )

    wire = encode()

    def decode() -> object:
        used, _, method = unmarshal(wire)
        data = wire[used:]
        used, _, header = unmarshal(data)
        _, _, content = unmarshal(data[used:])
        return method, header, content

    return encode, decode


def run(quick: bool) -> list[Row]:
    seconds = min_seconds(quick)
    publish, deliver = pamqp_commands.Basic.Publish, pamqp_commands.Basic.Deliver
    pairs = {
        "basic.publish": (
            _ours_message("basic.publish", PUBLISH, "server", PROPERTIES),
            _pamqp_message(publish(**PUBLISH), PROPERTIES),
        ),
        "basic.deliver": (
            _ours_message("basic.deliver", DELIVER, "client", PROPERTIES),
            _pamqp_message(deliver(**DELIVER), PROPERTIES),
        ),
        # What a consumer mostly receives (and the source benchmark's messages): no properties.
        "basic.deliver, no properties,": (
            _ours_message("basic.deliver", DELIVER, "client", {}),
            _pamqp_message(deliver(**DELIVER), {}),
        ),
    }
    rows = []
    for name, ((ours_enc, ours_dec), (ref_enc, ref_dec)) in pairs.items():
        for what, ours, ref in (("encode", ours_enc, ref_enc), ("decode", ours_dec, ref_dec)):
            figure = f"{name} message {what} (method+header+100 B body)"
            rows.append(row(figure, "msg/s", *compare(ours, ref, seconds), "pamqp"))
    encoded = values.encode_table(TABLE)
    assert values.decode_table(encoded, 0)[0] == TABLE
    ref_encoded = pamqp_encode.field_table(TABLE)
    encode_rates = compare(
        lambda: values.encode_table(TABLE), lambda: pamqp_encode.field_table(TABLE), seconds
    )
    decode_rates = compare(
        lambda: values.decode_table(encoded, 0),
        lambda: pamqp_decode.field_table(ref_encoded),
        seconds,
    )
    rows.append(row("field table encode (20 entries)", "tables/s", *encode_rates, "pamqp"))
    rows.append(row("field table decode (20 entries)", "tables/s", *decode_rates, "pamqp"))
    return rows
