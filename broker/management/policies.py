"""``/api/policies``, ``/api/operator-policies`` and ``/api/vhost-limits``: list, show, set
(PUT) and clear (DELETE) them as RabbitMQ 4.0's API does, with its answers and reasons
(measured on 4.0.5: tests/management/test_policies.py). Setting or clearing a policy
re-applies the policies of its vhost to every queue and exchange there.

Policies are the ``policymaker``'s (and the administrator's); operator policies and limits
the administrator's alone."""

from __future__ import annotations

import html
from typing import Any

from aiohttp import web

from ..model.policies import Policy, PolicyError, erlang_term, parse_policy
from ..model.vhost import VirtualHost
from .auth import require_tag, vhost_for, vhosts_in_scope
from .context import broker_of
from .listing import list_response
from .policy_store import save_policies
from .responses import ApiError, bad_request, created, found, json_response, no_content, read_json

#: The limits a vhost takes (RabbitMQ 4.0's ``vhost-limits``).
LIMITS = ("max-connections", "max-queues")


def _vhost_or_404(request: web.Request) -> VirtualHost:
    """The path's vhost; a missing one answers as RabbitMQ's PUT does (``vhost_not_found``)."""
    if request.match_info["vhost"] not in broker_of(request).vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    return vhost_for(request)


def _is_operator(request: web.Request) -> bool:
    return request.path.startswith("/api/operator-policies")


def _authorised(request: web.Request) -> None:
    require_tag(request, "administrator" if _is_operator(request) else "policymaker")


def sorted_policies(policies: list[Policy]) -> list[Policy]:
    """In RabbitMQ's listing order: by priority, the lowest first (a stable sort)."""
    return sorted(policies, key=lambda p: p.priority)


def policies_json(vhosts: list[VirtualHost], operator: bool) -> list[dict[str, Any]]:
    return [
        p.as_json()
        for v in vhosts
        for p in sorted_policies(list(v.policies.table(operator).values()))
    ]


async def list_policies(request: web.Request) -> web.StreamResponse:
    """In RabbitMQ's order (by priority) unless told otherwise, not by name as other
    listings are; ``columns``, ``sort`` and paging as theirs."""
    _authorised(request)
    policies = policies_json(vhosts_in_scope(request), _is_operator(request))
    return await list_response(request, policies, default_sort=())


async def get_policy(request: web.Request) -> web.Response:
    _authorised(request)
    table = vhost_for(request).policies.table(_is_operator(request))
    return json_response(found(table, request.match_info["name"]).as_json())


def set_policy(vhost: VirtualHost, name: str, body: dict[str, Any], operator: bool) -> bool:
    """Check and set the policy ``body`` describes, re-apply the vhost's policies; True if
    one of that name was there. 400 with RabbitMQ's reason for a policy it refuses."""
    missing = [key for key in ("pattern", "definition") if key not in body]
    if missing:
        bad_request(f"[{','.join(f'{{key_missing,{key}}}' for key in missing)}]")
    try:
        policy = parse_policy(vhost.name, name, body, operator)
    except PolicyError as e:
        # RabbitMQ's API escapes a policy's reason as HTML (not an operator policy's).
        bad_request(str(e) if operator else html.escape(str(e), quote=False))
    return vhost.set_policy(policy, operator)


async def put_policy(request: web.Request) -> web.Response:
    _authorised(request)
    vhost = _vhost_or_404(request)
    body = await read_json(request)
    existed = set_policy(vhost, request.match_info["name"], body, _is_operator(request))
    save_policies(broker_of(request))
    return created(existed)


async def delete_policy(request: web.Request) -> web.Response:
    _authorised(request)
    vhost = vhost_for(request)
    if not vhost.clear_policy(request.match_info["name"], _is_operator(request)):
        raise ApiError(404, "Object Not Found", "Not Found")
    save_policies(broker_of(request))
    return no_content()


# -- vhost limits ---------------------------------------------------------------------------


def limits_json(vhosts: list[VirtualHost]) -> list[dict[str, Any]]:
    return [{"vhost": v.name, "value": dict(v.limits)} for v in vhosts if v.limits]


def set_limit(vhost: VirtualHost, name: str, value: Any) -> None:
    """Set limit ``name`` of ``vhost`` (negative: none); 400 with RabbitMQ's reason."""
    if name not in LIMITS:
        reason = f"Unrecognised terms [{{{erlang_term(name)},{erlang_term(value)}}}] in limits"
        bad_request(f"Validation failed\n\n{reason}\n")
    if isinstance(value, bool) or not isinstance(value, int):
        bad_request(
            f"Validation failed\n\n{name} should be a number, actually was {erlang_term(value)}\n"
        )
    vhost.limits[name] = value


async def list_limits(request: web.Request) -> web.StreamResponse:
    require_tag(request, "monitoring")
    return await list_response(request, limits_json(vhosts_in_scope(request)))


async def put_limit(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    vhost = _vhost_or_404(request)
    body = await read_json(request)
    if "value" not in body:
        bad_request("[{key_missing,value}]")
    set_limit(vhost, request.match_info["name"], body["value"])
    save_policies(broker_of(request))
    return no_content()


async def delete_limit(request: web.Request) -> web.Response:
    require_tag(request, "administrator")
    vhost_for(request).limits.pop(request.match_info["name"], None)
    save_policies(broker_of(request))
    return no_content()


def add_routes(router: web.UrlDispatcher) -> None:
    for kind in ("policies", "operator-policies"):
        router.add_get(f"/api/{kind}", list_policies)
        router.add_get(f"/api/{kind}/{{vhost}}", list_policies)
        router.add_get(f"/api/{kind}/{{vhost}}/{{name}}", get_policy)
        router.add_put(f"/api/{kind}/{{vhost}}/{{name}}", put_policy)
        router.add_delete(f"/api/{kind}/{{vhost}}/{{name}}", delete_policy)
    router.add_get("/api/vhost-limits", list_limits)
    router.add_get("/api/vhost-limits/{vhost}", list_limits)
    router.add_put("/api/vhost-limits/{vhost}/{name}", put_limit)
    router.add_delete("/api/vhost-limits/{vhost}/{name}", delete_limit)
