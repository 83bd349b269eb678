"""RabbitMQ's HTTP answers: JSON bodies, ``{"error": ..., "reason": ...}`` errors, and the
request bodies and query flags handlers accept."""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar

from aiohttp import web

from amqp_protocol import errors

T = TypeVar("T")


class ApiError(Exception):
    """An error answer: HTTP ``status`` and RabbitMQ's ``error`` and ``reason``."""

    def __init__(self, status: int, error: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.error, self.reason = status, error, reason

    def response(self, challenge: bool = True) -> web.Response:
        """The answer; a 401 challenges for basic auth unless ``challenge`` is false."""
        body = {"error": self.error, "reason": self.reason}
        headers = {"WWW-Authenticate": 'Basic realm="RabbitMQ Management"'}
        with_challenge = self.status == 401 and challenge
        return json_response(body, self.status, headers if with_challenge else None)


def not_found(reason: str = "Not Found") -> NoReturn:
    raise ApiError(404, "Object Not Found", reason)


def found(table: Mapping[str, T], name: str) -> T:
    """``table[name]``, or 404."""
    value = table.get(name)
    if value is None:
        not_found()
    return value


def bad_request(reason: str) -> NoReturn:
    raise ApiError(400, "bad_request", reason)


def not_authorised(reason: str) -> NoReturn:
    raise ApiError(401, "not_authorised", reason)


def from_amqp(err: errors.AMQPError) -> ApiError:
    """An AMQP refusal of the model as RabbitMQ's management plugin reports it: the reply
    text without its ``NAME - `` prefix; access refusals are 401, the rest 400."""
    text = err.reply_text.split(" - ", 1)[-1]
    if err.reply_code == 403:
        return ApiError(401, "not_authorised", text)
    if err.reply_code == 404:
        return ApiError(404, "not_found", text)
    return ApiError(400, "bad_request", text)


def _default(value: Any) -> Any:
    """JSON for what AMQP tables hold besides JSON's types."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def dumps(body: Any) -> str:
    return json.dumps(body, default=_default)


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        text=dumps(body), status=status, content_type="application/json", headers=headers
    )


def no_content() -> web.Response:
    return web.Response(status=204)


def created(existed: bool) -> web.Response:
    """A PUT's answer: 201 for a new object, 204 for one that was there."""
    return web.Response(status=204 if existed else 201)


async def read_json(request: web.Request) -> dict[str, Any]:
    """The request's JSON object body ({} when empty); 400 for anything else."""
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        bad_request(f"failed to decode JSON: {e}")
    if not isinstance(body, dict):
        bad_request(f"expected a JSON object, got {type(body).__name__}")
    return body


def flag(body: dict[str, Any], name: str, default: bool = False) -> bool:
    """A boolean field as rabbitmqadmin and the console send them: true/false or the
    strings "true"/"false"; 400 for anything else."""
    value = body.get(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    bad_request(f"{name}={value!r}: expected true or false")


def integer(body: dict[str, Any], name: str, default: int, minimum: int = 0) -> int:
    """An integer field, given as a number or a string of digits; 400 for anything else."""
    value = body.get(name, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        bad_request(f"{name}={value!r}: expected an integer >= {minimum}")
    return value


def table(body: dict[str, Any], name: str) -> dict[str, Any]:
    """An arguments-like JSON object field ({} when absent or null)."""
    value = body.get(name) or {}
    if not isinstance(value, dict):
        bad_request(f"{name}={value!r}: expected a JSON object")
    return value


def text(body: dict[str, Any], name: str, default: str | None = None) -> str:
    value = body.get(name, default)
    if not isinstance(value, str):
        bad_request(f"{name} is required (a string)" if value is None else f"{name}: a string")
    return value


def query_flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"
