"""What every list answer accepts, as RabbitMQ's ``rabbit_mgmt_util``: ``name`` (with
``use_regex``) filters, ``sort`` and ``sort_reverse`` order (by vhost and name unless told),
``page`` and ``page_size`` page (the answer then becomes a page object), and ``columns``
keeps only the named, possibly dotted, fields.

A listing may cover tens of thousands of objects, and it runs on the broker's event loop,
which also serves every AMQP connection: building its items, filtering, keying the sort,
pruning and encoding each go ``SLICE`` items at a time with the loop free in between
(measured before: 50,000 queues held the loop for over 5 s, the AMQP clients waiting)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from aiohttp import web

from .responses import bad_request, dumps, integer, json_response

Item = dict[str, Any]
T = TypeVar("T")
R = TypeVar("R")
#: Items handled between two yields to the event loop (about a millisecond's work each).
SLICE = 100
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


async def sliced(function: Callable[[T], R], objects: Iterable[T]) -> list[R]:
    """``[function(o) for o in objects]``, ``SLICE`` at a time, yielding to the event loop
    in between. The objects are taken first: a dict of the model may change meanwhile (an
    object removed in between is still listed, as it was)."""
    pending = list(objects)
    done: list[R] = []
    for start in range(0, len(pending), SLICE):
        if start:
            await asyncio.sleep(0)
        done.extend(map(function, pending[start : start + SLICE]))
    return done


async def _sorted(items: list[Item], keys: list[Any], reverse: bool) -> list[Item]:
    """``items`` in the order of their ``keys`` (stable, as ``sorted``): runs of
    ``SLICE * 10`` sorted one at a time, then merged ``SLICE`` items at a time; one
    ``sorted`` of 50,000 items held the loop for a tenth of a second and more."""
    key = keys.__getitem__
    runs: list[list[int]] = []
    for start in range(0, len(items), SLICE * 10):
        await asyncio.sleep(0)
        run = range(start, min(len(items), start + SLICE * 10))
        runs.append(sorted(run, key=key, reverse=reverse))
    merged = heapq.merge(*runs, key=key, reverse=reverse)
    ordered: list[Item] = []
    while chunk := list(itertools.islice(merged, SLICE)):
        ordered.extend(items[n] for n in chunk)
        await asyncio.sleep(0)
    return ordered


async def _filtered(items: list[Item], query: Any) -> list[Item]:
    name = query.get("name")
    if not name:
        return items
    if query.get("use_regex", "false").lower() == "true":
        try:
            pattern = re.compile(name)
        except re.error as e:
            bad_request(f"name={name!r}: not a regular expression: {e}")
        keep = await sliced(lambda i: pattern.search(str(i.get("name", ""))) is not None, items)
    else:
        keep = await sliced(lambda i: name in str(i.get("name", "")), items)
    return [i for i, kept in zip(items, keep, strict=True) if kept]


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


async def arrange(
    items: list[Item], query: Any, default_sort: tuple[str, ...] = _DEFAULT_SORT
) -> Any:
    """The list (or page) a list request asks for; unless it says how to sort, by the
    ``default_sort`` fields the items have (none: in the order given)."""
    total = len(items)
    items = await _filtered(items, query)
    sort = query.get("sort")
    paths = (
        tuple(sort.split(","))
        if sort
        else tuple(p for p in default_sort if items and p in items[0])
    )
    reverse = query.get("sort_reverse", "false").lower() == "true"
    if paths:
        items = await _sorted(items, await sliced(lambda i: _sort_key(i, paths), items), reverse)
    elif reverse:
        items = items[::-1]
    columns = query.get("columns")
    if columns:
        wanted = [c.split(".") for c in columns.split(",") if c]
        items = await sliced(lambda i: _prune(i, wanted), items)
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


async def _streamed(request: web.Request, items: list[Item]) -> web.StreamResponse:
    """The JSON array of ``items``, encoded and written ``SLICE`` at a time (one write of a
    50,000-queue answer held the loop for a tenth of a second and more)."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    separator = b"["
    for start in range(0, len(items), SLICE):
        await asyncio.sleep(0)
        await response.write(separator + dumps(items[start : start + SLICE])[1:-1].encode())
        separator = b","
    await response.write(b"[]" if separator == b"[" else b"]")
    await response.write_eof()
    return response


async def list_response(
    request: web.Request, items: list[Item], default_sort: tuple[str, ...] = _DEFAULT_SORT
) -> web.StreamResponse:
    """The answer to a list request for ``items`` (build them with ``sliced``)."""
    answer = await arrange(items, request.query, default_sort)
    if isinstance(answer, dict):  # a page: at most MAX_PAGE_SIZE items
        return json_response(answer)
    return await _streamed(request, answer)
