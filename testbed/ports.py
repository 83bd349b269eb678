"""Ports for servers a test starts later (a RabbitMQ node, a broker process, an address meant
to refuse), chosen so that no other program can take them in the meantime.

A port from ``bind(("127.0.0.1", 0))`` is an ephemeral one: once that socket closes, the
kernel hands the same range to every program's next ``bind(0)`` and outgoing ``connect``.
While a RabbitMQ boots on such a port (seconds) or while a test's dead address should refuse,
another program may take it, and the test's probes then talk to that program instead. Spark
is such a program: its JVM listens on an ephemeral port for each Python worker it starts and
reads there first the length of the worker's secret. A probe's AMQP header read as that
length asks for 1.1 GB (``b"AMQP"`` as an int); one CI run's driver ran out of heap there.

So these ports come from below the kernel's ephemeral range, which only an explicit
``bind`` uses, and a process never hands out the same one twice.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: The lowest port handed out: above the ports services are usually configured on.
LOWEST = 10_000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Linux's default ephemeral range starts here; used where the kernel does not say.
_DEFAULT_EPHEMERAL_LOW = 32_768

_handed_out: set[int] = set()


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_LOW


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, outside the ephemeral
    range and not handed out before by this process."""
    high = ephemeral_low()
    if high <= LOWEST:
        raise RuntimeError(
            f"the kernel's ephemeral range ({_EPHEMERAL_RANGE}) starts at {high}, "
            f"leaving no port between {LOWEST} and it for tests to hold"
        )
    for _ in range(1000):
        port = random.randrange(LOWEST, high)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free TCP port on 127.0.0.1 between {LOWEST} and {high - 1}")
