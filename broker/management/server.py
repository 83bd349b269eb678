"""The management listener: an aiohttp application on the broker's event loop.

It serves RabbitMQ's HTTP API under ``/api/``, Prometheus metrics under ``/metrics`` and the
web console at ``/``. Errors are answered as RabbitMQ's management plugin answers them
(``{"error": ..., "reason": ...}``), unknown paths included; request bodies are bounded
(``ManagementConfig.max_body``). No access log is written (it would name users).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from aiohttp import web

from amqp_protocol import errors

from ..config import TLSConfig
from ..tls import server_context
from . import (
    bindings,
    connections,
    console,
    definitions,
    exchanges,
    metrics,
    overview,
    policies,
    queues,
    users,
    vhosts,
)
from .auth import api_auth
from .context import BROKER, SAMPLER
from .policy_store import load_policies
from .port_error import ManagementPortError
from .rates import INTERVAL, RateSampler
from .responses import ApiError, from_amqp

if TYPE_CHECKING:
    from .managed import ManagedBroker

log = logging.getLogger("broker.management")


@web.middleware
async def rabbitmq_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every error as RabbitMQ's JSON; mutations are never done by GET (the routes say so)."""
    try:
        return await handler(request)
    except ApiError as e:
        # Scripts of a page (the console) say so; a challenge would open the browser's dialog.
        return e.response(challenge=request.headers.get("X-Requested-With") != "XMLHttpRequest")
    except errors.AMQPError as e:  # the model refused, as it refuses an AMQP client
        return from_amqp(e).response()
    except web.HTTPRequestEntityTooLarge as e:
        return ApiError(413, "bad_request", f"request body too large: {e.text}").response()
    except web.HTTPNotFound:
        return ApiError(404, "Object Not Found", "Not Found").response()
    except web.HTTPMethodNotAllowed as e:
        allowed = ", ".join(sorted(e.allowed_methods))
        reason = f"{request.method} not allowed here (allowed: {allowed})"
        return ApiError(405, "Method Not Allowed", reason).response()


def build_app(broker: ManagedBroker, sampler: RateSampler) -> web.Application:
    app = web.Application(
        middlewares=[rabbitmq_errors, api_auth],
        client_max_size=broker.config.management.max_body,
    )
    app[BROKER] = broker
    app[SAMPLER] = sampler
    for module in (
        overview,
        vhosts,
        users,
        connections,
        exchanges,
        queues,
        bindings,
        policies,
        definitions,
        metrics,
        console,
    ):
        module.add_routes(app.router)
    return app


async def _listen(
    app: web.Application, host: str, port: int, tls: TLSConfig | None, setting: str
) -> web.AppRunner:
    """Serve ``app`` on host:port (HTTPS with ``tls``); ``setting`` names where the address
    comes from, for the error when it is taken."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    context = server_context(tls) if tls is not None else None
    try:
        await web.TCPSite(runner, host, port, ssl_context=context).start()
    except OSError as e:
        await runner.cleanup()
        raise ManagementPortError(
            e.errno, f"cannot listen on {host}:{port} ({setting}): {e.strerror}"
        ) from None
    return runner


class ManagementServer:
    def __init__(self, broker: ManagedBroker) -> None:
        self.broker = broker
        self.config = broker.config.management
        self.sampler = RateSampler()
        self._runners: list[web.AppRunner] = []
        self._timer: asyncio.Handle | None = None
        self.port = 0
        #: the /metrics-only listener's port (0 when there is none)
        self.prometheus_port = 0

    @property
    def url(self) -> str:
        host = self.config.host
        scheme = "https" if self.config.tls is not None else "http"
        return f"{scheme}://{f'[{host}]' if ':' in host else host}:{self.port}/"

    async def start(self) -> None:
        """Listen (and on ``prometheus_port`` for /metrics alone); a taken address raises
        ``ManagementPortError`` naming it."""
        config = self.config
        load_policies(self.broker)
        self._runners.append(
            await _listen(
                build_app(self.broker, self.sampler),
                config.host,
                config.port,
                config.tls,
                "--management-host/--management-port",
            )
        )
        self.port = self._runners[0].addresses[0][1]
        if config.prometheus_port is not None:
            metrics_only = web.Application(middlewares=[rabbitmq_errors])
            metrics_only[BROKER] = self.broker
            metrics.add_routes(metrics_only.router)
            try:
                runner = await _listen(
                    metrics_only,
                    config.host,
                    config.prometheus_port,
                    config.tls,
                    "[management] prometheus_port",
                )
            except ManagementPortError:
                await self.stop()
                raise
            self._runners.append(runner)
            self.prometheus_port = runner.addresses[0][1]
        self._tick()
        log.info("management API, console and /metrics on %s", self.url)

    def _tick(self) -> None:
        self._step(self.sampler.steps(self.broker, self.broker.loop.time))

    def _step(self, steps: Iterator[None]) -> None:
        """One step of a tick per loop turn; the next tick ``INTERVAL`` after the last step."""
        loop = self.broker.loop
        try:
            next(steps)
        except StopIteration:
            self._timer = loop.call_later(INTERVAL, self._tick)
        else:
            self._timer = loop.call_soon(self._step, steps)

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
