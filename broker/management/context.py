"""Where handlers find the broker: the application holds the broker (a ``ManagedBroker``: the
``BrokerServer``) and the management plane's own state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .managed import ManagedBroker
    from .rates import RateSampler

BROKER: web.AppKey[ManagedBroker] = web.AppKey("broker")
SAMPLER: web.AppKey[RateSampler] = web.AppKey("sampler")


def broker_of(request: web.Request) -> ManagedBroker:
    return request.app[BROKER]


def sampler_of(request: web.Request) -> RateSampler:
    return request.app[SAMPLER]
