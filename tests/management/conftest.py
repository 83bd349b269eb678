"""An in-process broker with its management listener, and a small HTTP client for it."""

from __future__ import annotations

import base64
import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from broker import Broker


class Api:
    """``call(method, path, body)`` -> (status, decoded JSON or None), never raising on
    HTTP errors, as user ``user``."""

    def __init__(self, base: str, user: str = "guest", password: str = "guest") -> None:
        self.base = base.rstrip("/")
        self.user, self.password = user, password

    def as_user(self, user: str, password: str) -> Api:
        return Api(self.base, user, password)

    def raw(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
    ) -> tuple[int, bytes, dict[str, str]]:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if auth:
            token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            all_headers["Authorization"] = f"Basic {token}"
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers=all_headers
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def call(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        status, raw, _ = self.raw(method, path, data, **kw)
        return status, json.loads(raw) if raw.strip() else None

    def get(self, path: str) -> Any:
        status, body = self.call("GET", path)
        assert status == 200, (path, status, body)
        return body

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        assert 200 <= status < 300, (method, path, status, answer)
        return answer


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture
def api(broker: Broker) -> Api:
    return Api(broker.management_url)


@pytest.fixture
def channel(broker: Broker) -> Iterator[Any]:
    """A pika channel on the broker (guest, vhost /)."""
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    try:
        yield conn.channel()
    finally:
        with contextlib.suppress(pika.exceptions.AMQPError):  # a test may have closed it
            conn.close()
