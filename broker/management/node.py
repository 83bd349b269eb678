"""The node this broker is, as RabbitMQ's API describes one: name, versions, listeners,
memory and disk, alarms."""

from __future__ import annotations

import os
import platform
import resource
import socket
import time
from typing import TYPE_CHECKING, Any

from ..version import __version__

if TYPE_CHECKING:
    from .managed import ManagedBroker

#: The RabbitMQ release whose behaviour the broker follows; tools read it from here to know
#: which API they speak to (``product_name``/``product_version`` name this broker).
RABBITMQ_VERSION = "4.0.5"
PRODUCT_NAME = "amqp-spark broker"
STARTED = time.time()


def node_name() -> str:
    return f"amqp-spark@{socket.gethostname().split('.')[0]}"


def resident_memory() -> int:
    """Bytes of resident memory of this process."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def versions() -> dict[str, str]:
    return {
        "management_version": RABBITMQ_VERSION,
        "rabbitmq_version": RABBITMQ_VERSION,
        "product_version": __version__,
        "product_name": PRODUCT_NAME,
        "erlang_version": f"Python {platform.python_version()}",
        "erlang_full_version": f"Python {platform.python_version()} ({platform.platform()})",
    }


def listeners(broker: ManagedBroker) -> list[dict[str, Any]]:
    node = node_name()
    found = [("amqp", broker.config.host, broker.port)]
    if broker.tls_port:
        found.append(("amqp/ssl", broker.config.host, broker.tls_port))
    for protocol, port in (
        ("stream", broker.streams.port),
        ("stream/ssl", broker.streams.tls_port),
    ):
        if port:
            found.append((protocol, broker.config.host, port))
    management = broker.management
    if management is not None:
        protocol = "https" if management.config.tls is not None else "http"
        found.append((protocol, management.config.host, management.port))
    return [
        {"node": node, "protocol": p, "ip_address": host, "port": port, "socket_opts": {}}
        for p, host, port in found
    ]


def alarms(broker: ManagedBroker) -> list[dict[str, str]]:
    """The resource alarms in effect, as /api/health/checks/alarms lists them."""
    found = []
    if broker.memory.blocked:
        found.append({"node": node_name(), "resource": "memory"})
    if broker.disk_alarm:
        found.append({"node": node_name(), "resource": "disk"})
    return found


def disk_free(broker: ManagedBroker) -> int:
    path = broker.config.data_dir or "."
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize


def fd_counts(broker: ManagedBroker) -> dict[str, int]:
    """File descriptors in use and allowed (RabbitMQ's ``fd_used``, ``fd_total``), when the
    broker knows its limit (``open_files_limit``); nothing otherwise."""
    total = getattr(broker, "open_files_limit", None)
    if not isinstance(total, int):
        return {}
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        return {}
    return {"fd_used": used, "fd_total": total}


def node_info(broker: ManagedBroker) -> dict[str, Any]:
    return {
        "name": node_name(),
        "type": "disc",
        "running": True,
        "being_drained": False,
        "os_pid": str(os.getpid()),
        "uptime": int((time.time() - STARTED) * 1000),
        "processors": os.cpu_count() or 1,
        "mem_used": resident_memory(),
        "mem_limit": broker.memory.high,
        "mem_alarm": broker.memory.blocked,
        "disk_free": disk_free(broker),
        "disk_free_limit": broker.config.disk_free_limit,
        "disk_free_alarm": broker.disk_alarm is not None,
        "sockets_used": len(broker.connections),
        "partitions": [],
        "applications": [],
        "net_ticktime": 60,
        "rates_mode": "basic",
        **fd_counts(broker),
    }
