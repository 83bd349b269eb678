"""Options of the source and the sink, each declared once.

Spark hands a Data Source its options as a case-insensitive dict of strings. Each side
declares its options as the fields of a frozen dataclass, one :func:`option` per field; that
declaration alone drives the parsing (:func:`parse_options`), the error messages (the
option's name, the value given and the parser's ``accepted`` text) and the options table of
the README and of docs/ (:func:`options_table`, checked by ``scripts/options_table.py
--check``). So
adding an option is adding one field. All options are parsed up front, so that a wrong
option fails at ``load()`` / start, never deep inside a running query.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from amqp_spark import credentials
from amqp_spark.credentials import REDACTED, names_secret

T = TypeVar("T")


class OptionError(ValueError):
    """A bad option: names the option, the value given (never that of an option whose key
    names a secret, see ``names_secret``) and what is accepted."""

    def __init__(self, option: str, value: object, accepted: str, hint: str = "") -> None:
        if value is not None and names_secret(option):
            value = REDACTED
        self.option, self.value, self.accepted = option, value, accepted
        shown = "<missing>" if value is None else repr(value)
        text = f"amqp option '{option}': got {shown}; accepted: {accepted}"
        super().__init__(text + (f". {hint}" if hint else ""))


class Refused(ValueError):
    """Raised by a parser for a value it does not accept; the text, if any, says why (the
    caller names the option, the value and what is accepted)."""


@dataclass(frozen=True)
class Parser(Generic[T]):
    """How one option's string becomes its value."""

    accepted: str  #: what is accepted, as error messages say it
    read: Callable[[str], T]  #: raises Refused
    #: The value is a URL: shown with its password hidden, and a password in it is warned
    #: about (see ``credentials``); an ``amqp(s)://`` one takes ``username`` and ``password``.
    redact: bool = False


@dataclass(frozen=True)
class Requires:
    """An option that only makes sense with another one: set (``values`` None), or with one
    of ``values``."""

    option: str
    values: tuple[str, ...] | None = None
    hint: str = ""

    def accepted(self) -> str:
        if self.values is None:
            return f"only with '{self.option}'"
        return f"only with {self.option} " + " or ".join(f"'{v}'" for v in self.values)


@dataclass(frozen=True)
class Option(Generic[T]):
    """One accepted option: its documented name, its parser, its default and its docs."""

    name: str  #: as documented (camelCase, like Spark's Kafka source); matched case-insensitively
    parser: Parser[T]
    default: T | None = None
    required: bool = False
    default_doc: str = ""  #: the README's default column when the default alone misleads
    doc: str = ""  #: the README's meaning column
    requires: Requires | None = None
    details: str = ""  #: the meaning column of the detailed table in docs/ (else ``doc``)

    def shown_default(self) -> str:
        if self.required:
            return "required"
        if self.default_doc:
            return self.default_doc
        if self.default is None or self.default == ():
            return "–"
        if isinstance(self.default, bool):
            return f"`{str(self.default).lower()}`"
        return f"`{self.default}`"

    def parse(self, value: str) -> T:
        try:
            return self.parser.read(value)
        except Refused as e:
            raise OptionError(self.name, self.shown(value), self.parser.accepted, str(e)) from None

    def shown(self, value: str | None) -> str | None:
        """``value`` as messages show it: a URL without its password."""
        return redact_uri(value) if self.parser.redact and value is not None else value


_OPTION = "amqp_spark.option"


def option(
    name: str,
    parser: Parser[Any],
    *,
    default: Any = None,
    required: bool = False,
    default_doc: str = "",
    doc: str = "",
    requires: Requires | None = None,
    details: str = "",
) -> Any:
    """A dataclass field that is the option ``name`` (see the module docstring)."""
    declared = Option(name, parser, default, required, default_doc, doc, requires, details)
    metadata = {_OPTION: declared}
    if required:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def declared_options(settings: type) -> dict[str, Option[Any]]:
    """The options declared by the dataclass ``settings``, by field name, in order."""
    return {
        f.name: f.metadata[_OPTION] for f in dataclasses.fields(settings) if _OPTION in f.metadata
    }


def parse_options(
    raw: Mapping[str, str], accepted: Mapping[str, Option[Any]], side: str, *, warn: bool = False
) -> tuple[dict[str, Any], frozenset[str]]:
    """Parse ``raw`` against ``accepted`` (by field name): the values by field name, and the
    documented names of the options given.

    Unknown options are refused (with the closest accepted name as a hint): a typo in
    ``maxMessagesPerTrigger`` must not silently mean "no limit". ``username`` and
    ``password`` go into the URL-valued options; ``warn``: a password inside one is warned
    about (once per query: the options are parsed again in each of Spark's Python workers).
    """
    by_key = {opt.name.lower(): (field, opt) for field, opt in accepted.items()}
    parsed: dict[str, Any] = {}
    given: set[str] = set()
    for key, value in raw.items():
        found = by_key.get(key.lower())
        if found is None:
            close = difflib.get_close_matches(key.lower(), by_key, n=1)
            meant = by_key[close[0]][1].name if close else ""
            hint = f"did you mean '{meant}'?" if close else ""
            names = sorted(opt.name for opt in accepted.values())
            shown = REDACTED if names_secret(meant) else value  # a misspelt 'password'
            raise OptionError(key, shown, f"the {side} options {names}", hint)
        field, opt = found
        parsed[field] = opt.parse(value)
        given.add(opt.name)
    for field, opt in accepted.items():
        if field not in parsed:
            if opt.required:
                raise OptionError(opt.name, None, opt.parser.accepted, "this option is required")
            parsed[field] = opt.default
    _check_requirements(raw, accepted, parsed, given)
    urls = {field: opt.name for field, opt in accepted.items() if opt.parser.redact}
    credentials.into_urls(parsed, urls, warn=warn)
    return parsed, frozenset(given)


def _check_requirements(
    raw: Mapping[str, str],
    accepted: Mapping[str, Option[Any]],
    parsed: Mapping[str, Any],
    given: set[str],
) -> None:
    by_name = {opt.name: field for field, opt in accepted.items()}
    for opt in accepted.values():
        need = opt.requires
        if need is None or opt.name not in given:
            continue
        other = parsed[by_name[need.option]]
        if (other is None) if need.values is None else (other not in need.values):
            shown = opt.shown(raw_value(raw, opt.name))
            raise OptionError(opt.name, shown, need.accepted(), need.hint)


def raw_value(raw: Mapping[str, str], name: str) -> str | None:
    """The value the user gave for ``name`` (keys arrive lower-cased)."""
    return next((v for k, v in raw.items() if k.lower() == name.lower()), None)


def options_table(settings: type, detailed: bool = False) -> str:
    """The table of the options ``settings`` declares (Markdown): the README's, or with
    ``detailed`` the one of docs/source.md and docs/sink.md."""
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for opt in declared_options(settings).values():
        meaning = (opt.details or opt.doc) if detailed else opt.doc
        rows.append(f"| `{opt.name}` | {opt.shown_default()} | {meaning} |")
    return "\n".join(rows) + "\n"


# -- parsers -------------------------------------------------------------------------------


def _non_empty(value: str) -> str:
    if not value:
        raise Refused()
    return value


STRING = Parser("a non-empty string", _non_empty)
ANY_STRING = Parser("any string, the empty one included", lambda value: value)


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise Refused()


BOOLEAN = Parser("true or false", _bool)


def integers(minimum: int, maximum: int | None = None) -> Parser[int]:
    """Integers in [minimum, maximum]."""

    def read(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise Refused() from None
        if number < minimum or (maximum is not None and number > maximum):
            raise Refused()
        return number

    accepted = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    return Parser(accepted, read)


def one_of(choices: Iterable[str], meaning: Mapping[str, T] | None = None) -> Parser[Any]:
    """One of ``choices`` (case-insensitive): its canonical spelling, or what ``meaning``
    maps it to."""
    canonical = {c.lower(): c for c in choices}

    def read(value: str) -> Any:
        found = canonical.get(value.strip().lower())
        if found is None:
            raise Refused()
        return found if meaning is None else meaning[found]

    return Parser(" or ".join(canonical.values()), read)


def _names(value: str) -> tuple[str, ...]:
    items = tuple(item.strip() for item in value.split(","))
    if not items or any(not item for item in items):
        raise Refused()
    return items


NAMES = Parser("a comma-separated list of non-empty names, e.g. 'orders,refunds'", _names)

URI_ACCEPTED = "amqp://user:password@host:port/vhost or amqps://..."


def url_parser(accepted: str, schemes: tuple[str, ...]) -> Parser[str]:
    """A URL of one of ``schemes`` with a host; only its shape is checked here (the clients
    parse it). Its password is redacted wherever the option is shown."""

    def read(value: str) -> str:
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            raise Refused() from None
        if parts.scheme not in schemes or not parts.hostname:
            raise Refused()
        return value

    return Parser(accepted, read, redact=True)


URI = url_parser(URI_ACCEPTED, ("amqp", "amqps"))
HTTP_URL = url_parser("an http:// or https:// URL such as 'http://host:15672'", ("http", "https"))
STREAM_URI_ACCEPTED = (
    "rabbitmq-stream://user:password@host:port/vhost, or with several nodes "
    "rabbitmq-stream://user:password@node1:5552,node2:5552/vhost"
)


def _stream_uri(value: str) -> str:
    """A ``rabbitmq-stream://`` URI naming one node or several (``client.stream.nodes``)."""
    from amqp_spark.client.stream.nodes import stream_endpoints

    try:
        stream_endpoints(value)
    except ValueError as e:
        raise Refused(str(e)) from None
    return value


STREAM_URI = Parser(STREAM_URI_ACCEPTED, _stream_uri, redact=True)

SECRET = Parser("a non-empty string (never shown)", _non_empty)


def stream_uri_option(requires: Requires | None = None) -> Any:
    """The option ``streamUri``: where RabbitMQ's stream protocol is served. Unset, the
    connections go to ``amqp_spark.client.stream.default_stream_uri`` of ``uri``."""
    return option(
        "streamUri",
        STREAM_URI,
        default_doc="every host of `uri` (or `addresses`) on port 5552, with `uri`'s "
        "credentials and vhost",
        doc="`rabbitmq-stream://host:port/vhost`, or with several nodes "
        "`rabbitmq-stream://node1:5552,node2:5552/vhost` (the login: the options `username` "
        "and `password`, as for `uri`): where the stream protocol is served; a connection "
        "goes to the first node that answers, to the next when it is lost "
        "(`maxReconnectAttempts` passes over them)",
        requires=requires,
    )


def username_option(side: str) -> Any:
    """The option ``username`` (a field named ``username``, see ``credentials``)."""
    return option(
        "username",
        STRING,
        default_doc="the `uri`'s",
        doc="the user to log in as, instead of the `uri`'s",
        details=f"the user to log in as; replaces the `uri`'s user on every connection of the "
        f"{side}, on every address, and logs in to `managementUrl` unless that URL has a login.",
    )


def password_option(side: str) -> Any:
    """The option ``password`` (a field named ``password``, see ``credentials``): Spark
    hides its value in plans and the UI, the connector in every message."""
    return option(
        "password",
        SECRET,
        default_doc="the `uri`'s",
        doc="the password, instead of the `uri`'s: Spark hides this option in plans and the "
        "UI (`dbutils.secrets.get(...)`), not a password inside `uri`",
        details="the password of `username` (or of the `uri`'s user); replaces the `uri`'s "
        f"on every connection of the {side}, on every address. Spark redacts an option "
        "whose key names a secret (`spark.redaction.regex`) in `explain()` and the Spark UI, "
        "and the connector never shows it; `uri` is shown as given, so keep passwords out of "
        "it (a password there is logged as a warning, once). See docs/security.md.",
    )


ADDRESSES_ACCEPTED = (
    "comma-separated host:port pairs such as 'node1:5672,node2:5672,node3:5672' (a port "
    "left out is the uri's; IPv6 hosts in brackets: '[::1]:5672'; ports 1-65535)"
)


def _addresses(value: str) -> str:
    """Comma-separated ``host[:port]``; the ports default to the uri's (see
    ``with_addresses``)."""
    from amqp_spark.client.addresses import parse_addresses

    try:
        parse_addresses(value, 5672)
    except ValueError as e:
        raise Refused(str(e)) from None
    return value.strip()


ADDRESSES = Parser(ADDRESSES_ACCEPTED, _addresses)


def with_addresses(uri: str, addresses: str | None) -> str:
    """The URL the client connects with: ``uri`` itself, or with ``addresses`` (the option,
    checked) instead of its host and port, every one named (see ``client.addresses``)."""
    from amqp_spark.client import addresses as hosts

    if addresses is None:
        return uri
    parts = urlsplit(uri)
    default_port = parts.port or (5671 if parts.scheme == "amqps" else 5672)
    return hosts.with_addresses(uri, hosts.parse_addresses(addresses, default_port))


def redact_uri(uri: str) -> str:
    """The URI with its password replaced, for messages and logs."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparseable uri>"
    if parts.password is None:
        return uri
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
