"""The sink's stream-protocol options: where they apply, what they refuse, and the
``streamUri`` that ``uri`` gives by default."""

from __future__ import annotations

import pytest

from amqp_spark.options import OptionError
from amqp_spark.sink.settings import SinkSettings

URI = "amqp://bob@h1:5673/prod"


def test_stream_writes_over_the_stream_protocol_at_the_uris_host_port_5552() -> None:
    settings = SinkSettings.parse({"uri": URI, "stream": "events", "password": "s3cret"})
    assert settings.over_stream_protocol
    assert settings.stream_uri_for_connections == "rabbitmq-stream://bob:s3cret@h1:5552/prod"


def test_a_super_stream_goes_over_amqp_unless_the_stream_protocol_is_asked_for() -> None:
    raw = {"uri": URI, "superStream": "invoices"}
    assert not SinkSettings.parse(raw).over_stream_protocol
    assert SinkSettings.parse({**raw, "streamProtocol": "stream"}).over_stream_protocol


@pytest.mark.parametrize(
    ("extra", "named", "accepted"),
    [
        ({"stream": "events", "exchange": "x"}, "exchange", "no 'exchange' with 'stream'"),
        ({"stream": "events", "superStream": "s"}, "superStream", "no 'superStream' with"),
        ({"stream": "events", "confirm": "false"}, "confirm", "true with 'stream'"),
        ({"streamUri": "rabbitmq-stream://u:pw@h:5552/"}, "streamUri", "only with 'stream'"),
        ({"streamProtocol": "stream"}, "streamProtocol", "only with 'superStream'"),
    ],
)
def test_what_the_stream_writer_cannot_honour_fails_at_start(
    extra: dict[str, str], named: str, accepted: str
) -> None:
    with pytest.raises(OptionError, match=f"'{named}'.*accepted: {accepted}") as refused:
        SinkSettings.parse({"uri": URI, **extra})
    assert "pw" not in str(refused.value)
