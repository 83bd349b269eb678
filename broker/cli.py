"""``amqp-broker`` / ``python -m broker``: run the broker until SIGTERM or SIGINT.

Unlike the in-process ``Broker()`` (in memory unless given a ``data_dir``, so that tests and
notebooks start clean), the program keeps durable state by default, as RabbitMQ does: in
``--data-dir``, else the configuration's ``data_dir``, else the per-user directory
``$XDG_DATA_HOME/amqp-spark-broker`` (``~/.local/share/amqp-spark-broker``). ``--in-memory``
keeps nothing. A data directory that cannot be used stops the program with exit status 1 and
a message naming the path, before anything is served.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys

from .config import BrokerConfig
from .management import ManagementPortError, ctl, streams_ctl
from .server.app import BrokerServer
from .server.descriptors import OpenFilesLimitError
from .store import StoreError, default_data_dir
from .stream_server.listener import StreamPortError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="amqp-broker", description="A pure-Python AMQP 0-9-1 broker.")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="TCP port (default 5672)")
    p.add_argument(
        "--stream-port",
        type=int,
        default=None,
        help="TCP port of RabbitMQ's stream protocol (default 5552; 0: none)",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help=f"where durable state is kept (default {default_data_dir()})",
    )
    p.add_argument(
        "--in-memory", action="store_true", help="keep no durable state (nothing survives)"
    )
    p.add_argument(
        "--management-host",
        default=None,
        help="address of the management API, console and /metrics (default 127.0.0.1)",
    )
    p.add_argument("--management-port", type=int, default=None, help="its TCP port (default 15672)")
    p.add_argument("--no-management", action="store_true", help="no management listener at all")
    p.add_argument("--config", default=None, help="a TOML configuration file")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    p.add_argument(
        "--open-files-limit",
        type=int,
        default=None,
        help="the soft RLIMIT_NOFILE to run with (default: the hard limit)",
    )
    return p.parse_args(argv)


def freeze_start_up_heap() -> None:
    """Leave what the process holds from its start (the imported modules, the generated
    protocol classes of four versions, a recovered store, the management stack when enabled)
    out of the garbage collector's walks from now on.

    It lives as long as the process, yet every full collection walked it: measured over
    sockets (``benchmarks/ab/broker_ab.py``), freezing it made the broker 10-13% cheaper per
    message than as it was, which is what the rework's larger import heap had cost. Only the
    program does this: an embedded ``Broker()`` shares its host's heap, which is the host's
    to manage. Objects freed later are still freed by reference counting; only cycles among
    them stay, a few start-up objects at most."""
    gc.collect()
    gc.freeze()


#: The third generation's threshold of the program (CPython's default: 10). Full collections
#: walk every message the broker holds (ready, unacked) and every object of a message is
#: tracked; measured (``benchmarks.consume_pattern --broker bundled``, 300,000 x 100 B): a
#: window of 131,070 held unacked and acked by halves, as the classic source holds it, cost
#: the broker 8.4-8.5 µs per message at the default, 6.3-6.5 at 10,000 (6.4-6.7 at 1,000,
#: 6.2 with full collections off); the raw client's pattern 6.6-6.7 and 5.6-5.9.
FULL_COLLECTION_THRESHOLD = 10_000


def spare_full_collections() -> None:
    """Make the collector's full walks rarer in the program: what the broker holds is many
    long-lived objects without cycles (messages, queue entries, unacked deliveries), freed
    by reference counting, and each walk visits all of them. Young generations are
    collected as before, so short-lived cycles go as soon; one that outlives them waits
    longer (about 70 million allocations, tens of seconds under load). As with the frozen
    heap, only the program does this: an embedded ``Broker()`` leaves its host's collector
    alone."""
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(gen0, gen1, FULL_COLLECTION_THRESHOLD)


async def serve(config: BrokerConfig) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = BrokerServer(config, loop)
    try:
        await server.start()
    except (ManagementPortError, StreamPortError) as e:
        await server.shutdown()
        raise SystemExit(f"amqp-broker: {e}") from None
    freeze_start_up_heap()
    spare_full_collections()
    await stop.wait()
    logging.getLogger("broker").info("signal received, shutting down")
    await server.shutdown()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["ctl"]:
        return ctl.main(argv[1:])
    if argv[:1] == ["streams"]:
        return streams_ctl.main(argv[1:])
    args = parse_args(argv)
    config = BrokerConfig.from_toml(args.config) if args.config else BrokerConfig()
    for name in ("host", "port", "data_dir", "log_level", "open_files_limit"):
        value = getattr(args, name)
        if value is not None:
            setattr(config, name, value)
    if args.stream_port is not None:
        config.stream_port = args.stream_port or None
    if args.in_memory:
        config.data_dir = None
    elif not config.data_dir:
        config.data_dir = str(default_data_dir())
    if args.management_host is not None:
        config.management.host = args.management_host
    if args.management_port is not None:
        config.management.port = args.management_port
    if args.no_management:
        config.management.enabled = False
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        asyncio.run(serve(config))
    except (StoreError, OpenFilesLimitError) as e:
        print(f"amqp-broker: {e}", file=sys.stderr)
        return 1
    return 0
