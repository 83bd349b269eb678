"""``amqp-broker`` / ``python -m broker``: run the broker until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from .config import BrokerConfig
from .server.app import BrokerServer


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="amqp-broker", description="A pure-Python AMQP 0-9-1 broker.")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="TCP port (default 5672)")
    p.add_argument("--data-dir", default=None, help="where durable state is kept")
    p.add_argument("--config", default=None, help="a TOML configuration file")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    return p.parse_args(argv)


async def serve(config: BrokerConfig) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = BrokerServer(config, loop)
    await server.start()
    await stop.wait()
    logging.getLogger("broker").info("signal received, shutting down")
    await server.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = BrokerConfig.from_toml(args.config) if args.config else BrokerConfig()
    for name in ("host", "port", "data_dir", "log_level"):
        value = getattr(args, name)
        if value is not None:
            setattr(config, name, value)
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    asyncio.run(serve(config))
    return 0
