"""Several broker addresses for one connection: parsing them, and which to try first.

A RabbitMQ cluster is reached through any of its nodes. The connector takes them as an
``addresses`` option (``host:port,host:port``) beside the ``uri``, which still gives the
user, password, vhost and TLS settings; the client carries both as one URL whose authority
names every host, as libpq and MongoDB write it::

    amqp://user:password@node1:5672,node2:5672,node3:5672/vhost?heartbeat=30

``connect()`` given such a URL tries the addresses in turn and returns the first connection
that opens; only when none does it fails, naming every address and why each failed
(``exceptions.NoNodeAnswered``).

Which address comes first is remembered per process and per list (``Rotation``): the one
that answered last time, so that every connection of a process goes to the same node while
it is up, and the next one after a connection to it was lost. A node that went away is thus
not tried first again by each reconnect of the process (a host that is down, rather than
refusing, would cost ``connection_timeout`` each time).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\[\]:/@,?#\s]+)(?::(?P<port>[^:]*))?")


@dataclass(frozen=True)
class Address:
    """One broker's host and port."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_addresses(text: str, default_port: int) -> tuple[Address, ...]:
    """``host[:port]`` items, comma-separated, in order (duplicates dropped). Raises
    ValueError saying which item is wrong and why."""
    found: list[Address] = []
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise ValueError("no address given")
    for item in items:
        if not item:
            raise ValueError(f"an empty item in {text!r}")
        match = _HOST_PORT.fullmatch(item)
        if match is None:
            raise ValueError(f"{item!r} is not host:port")
        port = default_port
        if match["port"] is not None:
            if not match["port"].isdigit() or not 1 <= int(match["port"]) <= 65535:
                raise ValueError(f"{item!r}: the port {match['port']!r} is not in 1-65535")
            port = int(match["port"])
        address = Address(match["host"].strip("[]"), port)
        if address not in found:
            found.append(address)
    return tuple(found)


def with_addresses(url: str, addresses: Sequence[Address]) -> str:
    """``url`` with its host and port replaced by every one of ``addresses``."""
    parts = urlsplit(url)
    user, at, _ = parts.netloc.rpartition("@")
    return parts._replace(netloc=f"{user}{at}{','.join(map(str, addresses))}").geturl()


def split_hosts(url: str) -> tuple[str, tuple[Address, ...] | None]:
    """``url`` with only its first host, and every host it names (None when it names one:
    the URL is an ordinary one). Raises ValueError for a list of hosts that does not parse."""
    parts = urlsplit(url)
    user, at, hosts = parts.netloc.rpartition("@")
    if "," not in hosts:
        return url, None
    default_port = 5671 if parts.scheme.lower() == "amqps" else 5672
    addresses = parse_addresses(hosts, default_port)
    first = parts._replace(netloc=f"{user}{at}{addresses[0]}").geturl()
    return first, addresses


class Rotation:
    """Which of one list of addresses to try first; thread-safe. See the module docstring."""

    def __init__(self, addresses: Sequence[Address]) -> None:
        self.addresses = tuple(addresses)
        self._first = 0
        self._lock = threading.Lock()

    def order(self) -> list[Address]:
        """Every address, from the one to try first on, wrapping around."""
        with self._lock:
            first = self._first
        return [*self.addresses[first:], *self.addresses[:first]]

    def answered(self, address: Address) -> None:
        """A connection to ``address`` opened: it comes first from now on."""
        with self._lock:
            self._first = self.addresses.index(address)

    def lost(self, address: Address) -> None:
        """A connection to ``address`` was lost: the next address comes first, unless
        another connection already moved on."""
        with self._lock:
            index = self.addresses.index(address)
            if self._first == index:
                self._first = (index + 1) % len(self.addresses)


_rotations: dict[tuple[Address, ...], Rotation] = {}
_rotations_lock = threading.Lock()


def rotation_for(addresses: Iterable[Address]) -> Rotation:
    """This process's rotation of ``addresses`` (one per distinct list)."""
    key = tuple(addresses)
    with _rotations_lock:
        rotation = _rotations.get(key)
        if rotation is None:
            rotation = _rotations[key] = Rotation(key)
        return rotation
