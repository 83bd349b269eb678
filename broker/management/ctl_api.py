"""What ``amqp-broker ctl``'s verbs share: the management API client, the error a verb
fails with (and its exit status), quoting of names in paths, and the check of a verb's
positional arguments. Its own module so that modules of verbs (ctl_policies) import it
without importing ctl, which imports them."""

from __future__ import annotations

import argparse
import base64
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

EX_USAGE, EX_UNAVAILABLE, EX_SOFTWARE = 64, 69, 70


class CtlError(Exception):
    def __init__(self, message: str, status: int = EX_SOFTWARE) -> None:
        super().__init__(message)
        self.status = status


class Api:
    def __init__(self, url: str, username: str, password: str, timeout: float) -> None:
        self.base = url.rstrip("/") + "/api"
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers=self.headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            try:
                reason = json.loads(e.read()).get("reason", e.reason)
            except ValueError:
                reason = e.reason
            raise CtlError(f"{method} {path}: {e.code} {reason}") from None
        except OSError as e:
            raise CtlError(f"cannot reach {self.base}: {e}", EX_UNAVAILABLE) from None
        return json.loads(raw) if raw.strip() else None


def q(name: str) -> str:
    return quote(name, safe="")


def arity(opts: argparse.Namespace, *names: str) -> list[str]:
    if len(opts.args) != len(names):
        raise CtlError(f"{opts.verb} takes {' '.join(f'<{n}>' for n in names)}", EX_USAGE)
    return list(opts.args)
