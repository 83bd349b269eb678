"""The connector's options for a broker's URLs, its login given as the ``username`` and
``password`` options rather than inside the URLs: the connector warns about a URL that holds a
password (Spark shows such an option's value in query plans; ``amqp_spark.credentials``), and
the benchmarks use the connector as a user should."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit


def login_options(**urls: str) -> dict[str, str]:
    """``urls`` (option name: URL) without their login, and the login of the first URL that
    has one as ``username`` and ``password``:
    ``login_options(uri="amqp://u:p@h/%2F")`` ->
    ``{"uri": "amqp://h/%2F", "username": "u", "password": "p"}``."""
    options: dict[str, str] = {}
    for name, url in urls.items():
        parts = urlsplit(url)
        userinfo, at, hosts = parts.netloc.rpartition("@")
        if at and "username" not in options:
            user, _, password = userinfo.partition(":")
            options["username"], options["password"] = unquote(user), unquote(password)
        options[name] = parts._replace(netloc=hosts).geturl()
    return options
