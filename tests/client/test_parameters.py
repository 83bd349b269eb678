"""URL parsing: RabbitMQ's URI spec and query parameters, without a broker."""

from __future__ import annotations

import ssl

import pytest

from amqp_spark.client import parse_url
from amqp_spark.client.parameters import ACCEPTED_PARAMS


def test_full_amqp_url_is_split_and_percent_decoded() -> None:
    p = parse_url("amqp://us%40er:p%3Ass@rabbit.example:5673/my%2Fvhost")
    assert (p.username, p.password, p.host, p.port, p.virtual_host) == (
        "us@er",
        "p:ss",
        "rabbit.example",
        5673,
        "my/vhost",
    )
    assert p.ssl_context is None


def test_defaults_fill_what_the_url_leaves_out() -> None:
    p = parse_url("amqp://")
    assert (p.username, p.password, p.host, p.port, p.virtual_host) == (
        "guest",
        "guest",
        "localhost",
        5672,
        "/",
    )
    assert p.heartbeat is None and p.frame_max == 131072 and p.connection_timeout == 10.0


@pytest.mark.parametrize("url", ["amqp://h", "amqp://h/", "amqp://h/%2F"])
def test_empty_path_and_encoded_slash_mean_the_default_vhost(url: str) -> None:
    assert parse_url(url).virtual_host == "/"


def test_query_parameters_follow_rabbitmq_units() -> None:
    p = parse_url("amqp://h?heartbeat=5&connection_timeout=2500&frame_max=8192&channel_max=10")
    assert p.heartbeat == 5
    assert p.connection_timeout == 2.5  # milliseconds in the URL
    assert (p.frame_max, p.channel_max) == (8192, 10)


def test_heartbeat_zero_is_kept_to_disable_heartbeats() -> None:
    assert parse_url("amqp://h?heartbeat=0").heartbeat == 0


def test_unknown_query_parameter_is_named_with_the_accepted_ones() -> None:
    with pytest.raises(ValueError) as e:
        parse_url("amqp://h?hearbeat=5")
    assert "'hearbeat'" in str(e.value)
    assert all(name in str(e.value) for name in ACCEPTED_PARAMS)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://h", "scheme"),
        ("amqp://h?heartbeat=soon", "heartbeat"),
        ("amqp://h?channel_max=-1", "negative"),
        ("amqp://h?frame_max=100", "minimum"),
        ("amqp://h?connection_timeout=0", "positive"),
        ("amqp://h/a/b", "%2F"),
        ("amqp://h?cacertfile=/ca.pem", "amqps"),
        ("amqps://h?verify=maybe", "verify_peer"),
        ("amqp://h?auth_mechanism=EXTERNAL", "PLAIN"),
    ],
)
def test_bad_urls_are_refused_with_a_reason(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_url(url)


def test_amqps_verifies_the_server_by_default_on_port_5671() -> None:
    p = parse_url("amqps://u:pw@secure.example/v")
    assert p.port == 5671
    assert p.ssl_context is not None
    assert p.ssl_context.verify_mode == ssl.CERT_REQUIRED and p.ssl_context.check_hostname
    assert p.server_hostname == "secure.example"


def test_amqps_verify_none_and_server_name_indication() -> None:
    p = parse_url("amqps://h?verify=verify_none&server_name_indication=broker.internal")
    assert p.ssl_context is not None
    assert p.ssl_context.verify_mode == ssl.CERT_NONE and not p.ssl_context.check_hostname
    assert p.server_hostname == "broker.internal"


def test_amqps_missing_certificate_file_fails() -> None:
    with pytest.raises(OSError):
        parse_url("amqps://h?cacertfile=/nonexistent/ca.pem")


def test_a_given_ssl_context_is_used_as_is() -> None:
    context = ssl.create_default_context()
    assert parse_url("amqps://h", ssl_context=context).ssl_context is context
    with pytest.raises(ValueError, match="amqps"):
        parse_url("amqp://h", ssl_context=context)


def test_password_stays_out_of_repr_and_redacted_url() -> None:
    p = parse_url("amqp://user:s3cr3t-pw@h/v")
    assert "s3cr3t-pw" not in repr(p)
    assert "s3cr3t-pw" not in p.redacted_url()
    assert p.redacted_url() == "amqp://user@h:5672/v"
