"""The management plane's stack (aiohttp, the Prometheus client) is imported only by a broker
that starts its listener: a broker without it (``--no-management``, or embedded in a test)
neither pays the import time nor carries the larger heap, which every full garbage
collection walks."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("aiohttp", "prometheus_client", "broker.management.server")


def _modules_after(code: str) -> set[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {m for m in json.loads(found.splitlines()[-1]) if m.startswith(HEAVY)}


def test_a_broker_without_management_imports_no_http_stack() -> None:
    started = """
import asyncio
from broker import cli, runner
from broker.config import BrokerConfig
from broker.server.app import BrokerServer

async def main():
    config = BrokerConfig(port=0, data_dir=None, stream_port=None)
    config.management.enabled = False
    server = BrokerServer(config, asyncio.get_running_loop())
    await server.start()
    await server.shutdown()

asyncio.run(main())
"""
    assert _modules_after(started) == set()


def test_a_broker_with_management_imports_it_when_the_listener_starts() -> None:
    started = """
import asyncio
from broker.config import BrokerConfig
from broker.server.app import BrokerServer

async def main():
    config = BrokerConfig(port=0, data_dir=None, stream_port=None)
    config.management.port = 0
    server = BrokerServer(config, asyncio.get_running_loop())
    await server.start()
    assert server.management is not None and server.management.port > 0
    await server.shutdown()

asyncio.run(main())
"""
    assert {"aiohttp", "prometheus_client", "broker.management.server"} <= _modules_after(started)
