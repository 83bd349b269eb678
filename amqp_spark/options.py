"""Option parsing shared by the source and the sink.

Spark hands a Data Source its options as a case-insensitive dict of strings. Each side
declares the options it accepts once (name, parser, default, help) and parses them all up
front, so that a wrong option fails at ``load()`` / start with a message that names the
option, the bad value and what is accepted — never deep inside a running query.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")


class OptionError(ValueError):
    """A bad option: names the option, the value given and what is accepted."""

    def __init__(self, option: str, value: object, accepted: str, hint: str = "") -> None:
        self.option, self.value, self.accepted = option, value, accepted
        shown = "<missing>" if value is None else repr(value)
        text = f"amqp option '{option}': got {shown}; accepted: {accepted}"
        super().__init__(text + (f". {hint}" if hint else ""))


@dataclass(frozen=True)
class Option(Generic[T]):
    """One accepted option: its documented name, how to parse it and its default."""

    name: str  #: as documented (camelCase, like Spark's Kafka source); matched case-insensitively
    parse: Callable[[str, str], T]  #: (option name, raw string) -> value; raises OptionError
    default: T | None = None
    required: bool = False
    doc: str = ""


def parse_options(
    raw: Mapping[str, str], accepted: Iterable[Option[Any]], side: str
) -> dict[str, Any]:
    """Parse ``raw`` against ``accepted``; keys of the result are the documented names.

    Unknown options are refused (with the closest accepted name as a hint): a typo in
    ``maxMessagesPerTrigger`` must not silently mean "no limit".
    """
    by_key = {opt.name.lower(): opt for opt in accepted}
    parsed: dict[str, Any] = {}
    for key, value in raw.items():
        opt = by_key.get(key.lower())
        if opt is None:
            close = difflib.get_close_matches(key.lower(), by_key, n=1)
            hint = f"did you mean '{by_key[close[0]].name}'?" if close else ""
            raise OptionError(
                key, value, f"the {side} options {sorted(o.name for o in by_key.values())}", hint
            )
        parsed[opt.name] = opt.parse(opt.name, value)
    for opt in by_key.values():
        if opt.name not in parsed:
            if opt.required:
                raise OptionError(opt.name, None, opt.doc or "a value", "this option is required")
            parsed[opt.name] = opt.default
    return parsed


# -- parsers -------------------------------------------------------------------------------


def parse_str(name: str, value: str) -> str:
    if not value:
        raise OptionError(name, value, "a non-empty string")
    return value


def parse_bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise OptionError(name, value, "true or false")


def int_parser(minimum: int, maximum: int | None = None) -> Callable[[str, str], int]:
    """A parser of integers in [minimum, maximum]."""
    accepted = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")

    def parse(name: str, value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise OptionError(name, value, accepted) from None
        if number < minimum or (maximum is not None and number > maximum):
            raise OptionError(name, value, accepted)
        return number

    return parse


def choice_parser(*choices: str) -> Callable[[str, str], str]:
    """A parser of one of ``choices`` (case-insensitive); returns the canonical spelling."""
    canonical = {c.lower(): c for c in choices}

    def parse(name: str, value: str) -> str:
        found = canonical.get(value.strip().lower())
        if found is None:
            raise OptionError(name, value, " or ".join(choices))
        return found

    return parse


def parse_list(name: str, value: str) -> tuple[str, ...]:
    """A comma-separated list of non-empty names."""
    items = tuple(item.strip() for item in value.split(","))
    if not items or any(not item for item in items):
        raise OptionError(
            name, value, "a comma-separated list of non-empty names, e.g. 'orders,refunds'"
        )
    return items


def parse_uri(name: str, value: str) -> str:
    """An ``amqp://`` or ``amqps://`` URI; only its shape is checked here (the client parses it)."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise OptionError(
            name, redact_uri(value), "amqp://user:password@host:port/vhost or amqps://..."
        ) from None
    if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
        raise OptionError(
            name, redact_uri(value), "amqp://user:password@host:port/vhost or amqps://..."
        )
    return value


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
