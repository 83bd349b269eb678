"""What every list answer accepts, as RabbitMQ's ``rabbit_mgmt_util``: ``name`` (with
``use_regex``) filters, ``sort`` and ``sort_reverse`` order (by vhost and name unless told),
``page`` and ``page_size`` page (the answer then becomes a page object), and ``columns``
keeps only the named, possibly dotted, fields."""

from __future__ import annotations

import math
import re
from typing import Any

from aiohttp import web

from .responses import bad_request, integer, json_response

Item = dict[str, Any]
#: RabbitMQ's largest page
MAX_PAGE_SIZE = 500
_DEFAULT_SORT = ("vhost", "name")


def _lookup(item: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(item, dict):
            return None
        item = item.get(part)
    return item


def _sort_key(item: Item, paths: tuple[str, ...]) -> tuple[Any, ...]:
    """Values of mixed or missing types order as RabbitMQ's: missing first, numbers before
    strings."""
    key: list[Any] = []
    for path in paths:
        value = _lookup(item, path)
        if value is None:
            key.append((0, 0))
        elif isinstance(value, (int, float)):
            key.append((1, value))
        else:
            key.append((2, str(value)))
    return tuple(key)


def _filtered(items: list[Item], query: Any) -> list[Item]:
    name = query.get("name")
    if not name:
        return items
    if query.get("use_regex", "false").lower() == "true":
        try:
            pattern = re.compile(name)
        except re.error as e:
            bad_request(f"name={name!r}: not a regular expression: {e}")
        return [i for i in items if pattern.search(str(i.get("name", "")))]
    return [i for i in items if name in str(i.get("name", ""))]


def _prune(item: Item, columns: list[list[str]]) -> Item:
    out: Item = {}
    for path in columns:
        value = _lookup(item, ".".join(path))
        if value is None and not _has(item, path):
            continue
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    return out


def _has(item: Any, path: list[str]) -> bool:
    for part in path:
        if not isinstance(item, dict) or part not in item:
            return False
        item = item[part]
    return True


def arrange(items: list[Item], query: Any) -> Any:
    """The list (or page) a list request asks for."""
    total = len(items)
    items = _filtered(items, query)
    sort = query.get("sort")
    paths = (
        tuple(sort.split(","))
        if sort
        else tuple(p for p in _DEFAULT_SORT if items and p in items[0])
    )
    reverse = query.get("sort_reverse", "false").lower() == "true"
    if paths:
        items = sorted(items, key=lambda i: _sort_key(i, paths), reverse=reverse)
    elif reverse:
        items = items[::-1]
    columns = query.get("columns")
    if columns:
        wanted = [c.split(".") for c in columns.split(",") if c]
        items = [_prune(i, wanted) for i in items]
    if "page" not in query:
        return items
    page = integer(dict(query), "page", 1, minimum=1)
    size = integer(dict(query), "page_size", 100, minimum=1)
    if size > MAX_PAGE_SIZE:
        bad_request(f"page_size={size}: at most {MAX_PAGE_SIZE}")
    page_count = max(1, math.ceil(len(items) / size))
    if page > page_count:
        bad_request(f"page={page}: page out of range (there are {page_count})")
    chunk = items[(page - 1) * size : page * size]
    return {
        "filtered_count": len(items),
        "item_count": len(chunk),
        "items": chunk,
        "page": page,
        "page_count": page_count,
        "page_size": size,
        "total_count": total,
    }


def list_response(request: web.Request, items: list[Item]) -> web.Response:
    return json_response(arrange(items, request.query))
