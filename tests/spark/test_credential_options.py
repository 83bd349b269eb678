"""The ``username`` and ``password`` options of the source and the sink: they replace the
``uri``'s on every address, and no error shows the value of an option whose key names a
secret (as Spark's ``spark.redaction.regex`` sees keys), known or unknown. A password
inside a URL-valued option is warned about, once."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from amqp_spark.client.parameters import parse_url_hosts
from amqp_spark.options import OptionError
from amqp_spark.sink.settings import SinkSettings
from amqp_spark.source.options import SourceOptions

SECRET = "s3cr3t:p@ss/w%rd"
Parse = Callable[[Mapping[str, str]], Any]
SIDES = [
    pytest.param(lambda raw: SourceOptions.parse({"queue": "q", **raw}, warn=True), id="source"),
    pytest.param(lambda raw: SinkSettings.parse(raw, warn=True), id="sink"),
]


@pytest.mark.parametrize("parse", SIDES)
def test_username_and_password_replace_the_uris_on_every_address(parse: Parse) -> None:
    parsed = parse(
        {
            "uri": "amqp://alice:old@h/%2F",
            "username": "bob",
            "password": SECRET,
            "addresses": "n1:5672,n2:5673",
        }
    )
    hosts = parse_url_hosts(parsed.uri)
    assert [(p.host, p.port, p.username, p.password) for p in hosts] == [
        ("n1", 5672, "bob", SECRET),
        ("n2", 5673, "bob", SECRET),
    ]
    assert SECRET not in repr(hosts)


@pytest.mark.parametrize("parse", SIDES)
def test_password_alone_keeps_the_uris_user_and_username_alone_its_password(
    parse: Parse,
) -> None:
    (params,) = parse_url_hosts(parse({"uri": "amqp://alice@h/", "password": SECRET}).uri)
    assert (params.username, params.password) == ("alice", SECRET)
    (params,) = parse_url_hosts(parse({"uri": "amqp://alice:pw@h/", "username": "bob"}).uri)
    assert (params.username, params.password) == ("bob", "pw")


@pytest.mark.parametrize("parse", SIDES)
@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"password": ""}, "password"),  # refused, the empty value not shown either
        ({"pasword": SECRET}, "pasword"),  # a misspelt password: unknown
        ({"apiToken": SECRET}, "apiToken"),
        ({"secretKey": SECRET}, "secretKey"),
        ({"fs.s3a.access.key": SECRET}, "fs.s3a.access.key"),
        ({"uri": "amqp://u:s3cr3t@h:99999/"}, "uri"),  # a bad port
        ({"managementUrl": "http://u:s3cr3t@h:15672"}, "managementUrl"),  # no superStream
        ({"managementUrl": "ftp://u:s3cr3t@h"}, "managementUrl"),
    ],
)
def test_no_error_shows_a_secret(parse: Parse, raw: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError) as caught:
        parse({"uri": "amqp://h/", **raw})
    assert caught.value.option == named
    assert "s3cr3t" not in str(caught.value)
    assert "s3cr3t" not in repr(caught.value.value)


@pytest.mark.parametrize("parse", SIDES)
def test_a_password_inside_the_uri_is_warned_about_once(
    parse: Parse, caplog: pytest.LogCaptureFixture
) -> None:
    uri = f"amqp://alice:{SECRET.replace('/', '%2F')}@h-{uuid.uuid4().hex[:8]}/"
    with caplog.at_level(logging.WARNING, logger="amqp_spark"):
        for _ in range(3):  # Spark's workers parse the options again and again
            parse({"uri": uri})
    assert [r.getMessage()[:32] for r in caplog.records] == ["amqp option 'uri' holds a passwo"]
    assert "s3cr3t" not in caplog.text
    assert "option 'password'" in caplog.text


@pytest.mark.parametrize("parse", SIDES)
def test_credentials_given_as_options_are_not_warned_about(
    parse: Parse, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="amqp_spark"):
        parse({"uri": f"amqp://h-{uuid.uuid4().hex[:8]}/", "username": "u", "password": SECRET})
    assert caplog.records == []


def test_parses_other_than_a_querys_first_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    """Spark's workers parse the options again (reader, stream reader): no more warnings."""
    uri = f"amqp://alice:pw@h-{uuid.uuid4().hex[:8]}/"
    with caplog.at_level(logging.WARNING, logger="amqp_spark"):
        SourceOptions.parse({"uri": uri, "queue": "q"})
        SinkSettings.parse({"uri": uri})
    assert caplog.records == []
