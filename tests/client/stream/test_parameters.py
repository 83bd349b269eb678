"""``rabbitmq-stream://`` URIs: what each part sets, several hosts, what is refused."""

from __future__ import annotations

import pytest

from amqp_spark.client.addresses import Address
from amqp_spark.client.stream import StreamParameters, parse_stream_url


def test_every_part_of_the_uri_is_used() -> None:
    (params,) = parse_stream_url(
        "rabbitmq-stream://alice:s%40cret@node1:5553/my%2Fvhost?heartbeat=5&frame_max=65536"
    )
    assert params == StreamParameters(
        host="node1",
        port=5553,
        virtual_host="my/vhost",
        username="alice",
        password="s@cret",
        heartbeat=5,
        frame_max=65536,
    )


def test_defaults_are_rabbitmqs() -> None:
    (params,) = parse_stream_url("rabbitmq-stream://h")
    assert (params.port, params.virtual_host, params.username) == (5552, "/", "guest")
    (tls,) = parse_stream_url("rabbitmq-stream+tls://h/")
    assert tls.port == 5551 and tls.ssl_context is not None


def test_several_hosts_give_one_parameter_set_each() -> None:
    targets = parse_stream_url("rabbitmq-stream://u:p@a:1,b,[::1]:3/v")
    assert [t.address for t in targets] == [Address("a", 1), Address("b", 5552), Address("::1", 3)]
    assert {(t.username, t.password, t.virtual_host) for t in targets} == {("u", "p", "v")}


def test_the_password_shows_nowhere() -> None:
    (params,) = parse_stream_url("rabbitmq-stream://u:hunter2@h:5552/v")
    assert "hunter2" not in repr(params)
    assert params.redacted_url() == "rabbitmq-stream://u@h:5552/v"


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("amqp://h", "use rabbitmq-stream://"),
        ("rabbitmq-stream://h/a/b", "%2F"),
        ("rabbitmq-stream://h?nope=1", "accepted: heartbeat, frame_max, connection_timeout"),
        ("rabbitmq-stream://h?heartbeat=-1", "not a non-negative integer"),
        ("rabbitmq-stream://h?frame_max=100", "below 4096"),
        ("rabbitmq-stream://h?connection_timeout=0", "positive"),
        ("rabbitmq-stream://h:99999", "not in 1-65535"),
    ],
)
def test_bad_uris_are_refused_saying_why(uri: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("?", r"\?")):
        parse_stream_url(uri)
