"""Credentials in options: the ``username`` and ``password`` options, and secrets kept out
of what the connector prints.

Spark shows a Data Source's options in query plans (``explain()``, the Spark UI's SQL tab)
and hides the value of an option only when its *key* matches ``spark.redaction.regex``
(default ``(?i)secret|password|token|access[.]?key``) or ``spark.sql.redaction.options.regex``
(default ``(?i)url``). So a password given as the option ``password`` (say
``dbutils.secrets.get(...)`` on Databricks) is hidden there, and one inside ``uri`` is not:
the source cannot change how Spark prints its options (measured: docs/security.md). Hence:

* ``into_urls`` puts ``username`` and ``password`` into every URL-valued option (``uri``,
  ``streamUri`` and any other declared with a redacting parser, every host of ``addresses``
  included), so each connection the source or the sink opens, on the driver or an
  executor, has them;
* it logs one warning when such a URL holds a password, where a query's options are first
  parsed: at ``load()`` for the source, where the writer is made for the sink;
* messages never show the value of an option whose key names a secret (``names_secret``),
  and show URLs through ``amqp_spark.options.redact_uri``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from amqp_spark.client.parameters import with_credentials

log = logging.getLogger("amqp_spark")

#: Spark's default ``spark.redaction.regex``: option keys whose values Spark hides in plans
#: and the UI, and which no message of the connector shows either.
SECRET_KEY = re.compile(r"(?i)secret|password|token|access[.]?key")
#: What a message shows instead of the value of such an option.
REDACTED = "<redacted>"
#: The field names of the ``username`` and ``password`` options in a side's options.
USERNAME, PASSWORD = "username", "password"

PASSWORD_IN_URL = (
    "amqp option '%s' holds a password: Spark shows this option's value in query plans "
    "(explain(), the Spark UI) since its key does not name a secret. Give the password as "
    "the option 'password' instead, e.g. .option('password', dbutils.secrets.get(scope, "
    "key)), and leave it out of '%s' ('username' may go there too)."
)
_warned: set[tuple[str, str]] = set()  #: (option, URL without password) warned about


def names_secret(option: str) -> bool:
    """Whether the option key ``option`` names a secret, as Spark's redaction sees it."""
    return SECRET_KEY.search(option) is not None


def into_urls(values: dict[str, Any], urls: Mapping[str, str], warn: bool) -> None:
    """Put the options ``username`` and ``password`` of ``values`` (parsed, by field) into
    each ``amqp://`` / ``amqps://`` / ``rabbitmq-stream://`` value of the fields ``urls``
    names (field: option name), where they replace the URL's own; with ``warn``, warn about
    a URL that holds a password."""
    for field, name in urls.items():
        url = values.get(field)
        if not isinstance(url, str):
            continue
        if warn:
            _warn_if_password_in(name, url)
        if urlsplit(url).scheme.lower() in ("amqp", "amqps", "rabbitmq-stream"):
            values[field] = with_credentials(url, values.get(USERNAME), values.get(PASSWORD))


def _warn_if_password_in(option: str, url: str) -> None:
    """Once per process, option and URL: Spark reuses its Python workers."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return
        key = (option, parts.netloc.rpartition("@")[2] + parts.path)
    except ValueError:
        return
    if key not in _warned:
        _warned.add(key)
        log.warning(PASSWORD_IN_URL, option, option)
