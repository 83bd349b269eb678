"""Debian's chromium, headless, driven over the DevTools protocol (a websocket; aiohttp's
client), for the console's browser test: navigate, evaluate script, wait for a condition,
take screenshots. Every wait is bounded."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
)
START_TIMEOUT = 30.0


def chromium_path() -> str | None:
    return shutil.which("chromium")


class Chromium:
    def __init__(self) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="console-browser-")
        self._process: subprocess.Popen[bytes] | None = None
        self._ws: aiohttp.ClientWebSocketResponse[bool] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._ids = itertools.count(1)

    async def start(self) -> None:
        path = chromium_path()
        assert path is not None
        profile = Path(self._profile.name)
        self._process = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self._process.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as response:
            pages = [t for t in await response.json() if t["type"] == "page"]
        self._ws = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        await self.send("Page.enable")
        await self.send("Runtime.enable")

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._ws is not None
        call_id = next(self._ids)
        await self._ws.send_str(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = await asyncio.wait_for(self._ws.receive(), 30)
            data = json.loads(message.data)
            if data.get("id") == call_id:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                result: dict[str, Any] = data["result"]
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of ``expression`` once it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                page = await self.evaluate("location.href + '\\n' + document.body.innerText")
                raise AssertionError(f"not true within {timeout}s: {expression}\npage: {page}")
            await asyncio.sleep(0.1)

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    async def stop(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._session is not None:
            await self._session.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
        self._profile.cleanup()
