"""The web console at ``/``: static files (``static/``: one HTML page, a script and a style
sheet, no build step) that use the HTTP API with the user's credentials."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

STATIC = Path(__file__).with_name("static")


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", index)
    router.add_static("/static/", STATIC)
