"""Broker settings: defaults, a TOML file, and the users and virtual hosts it declares.

Example file::

    host = "0.0.0.0"
    port = 5672
    heartbeat = 60                     # seconds proposed in connection.tune; 0 disables
    frame_max = 131072
    channel_max = 2047
    memory_high_watermark = 1073741824 # bytes of queued message bodies; above it publishers block
    vhosts = ["/", "staging"]
    loopback_users = ["guest"]         # these users may connect from 127.0.0.0/8 and ::1 only

    [users.app]
    password = "secret"                # or password_hash = "<RabbitMQ SHA-256 hash>"
    vhosts = ["/", "staging"]
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .auth import check_password, hash_password

tomllib: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")


@dataclass
class User:
    name: str
    password_hash: str
    vhosts: list[str] = field(default_factory=lambda: ["/"])
    tags: list[str] = field(default_factory=list)

    def authenticate(self, password: str) -> bool:
        return check_password(password, self.password_hash)


def _default_users() -> dict[str, User]:
    return {"guest": User("guest", hash_password("guest"), ["/"], ["administrator"])}


@dataclass
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 5672
    data_dir: str | None = None
    log_level: str = "INFO"
    heartbeat: int = 60
    frame_max: int = 131072
    channel_max: int = 2047
    memory_high_watermark: int = 1 << 30
    #: A connection stops reading its socket while this many bytes wait to be written to it.
    write_buffer_high: int = 4 << 20
    vhosts: list[str] = field(default_factory=lambda: ["/"])
    users: dict[str, User] = field(default_factory=_default_users)
    loopback_users: list[str] = field(default_factory=lambda: ["guest"])

    @classmethod
    def from_toml(cls, path: str | Path) -> BrokerConfig:
        with open(path, "rb") as f:
            return cls.from_dict(tomllib.load(f))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BrokerConfig:
        data = dict(data)
        users_data = data.pop("users", None)
        config = cls(**data)
        if users_data is not None:
            config.users = {name: _user(name, spec) for name, spec in users_data.items()}
        return config


def _user(name: str, spec: dict[str, Any]) -> User:
    if "password_hash" in spec:
        password_hash = spec["password_hash"]
    elif "password" in spec:
        password_hash = hash_password(spec["password"])
    else:
        raise ValueError(f"user {name!r} needs password or password_hash")
    return User(name, password_hash, list(spec.get("vhosts", ["/"])), list(spec.get("tags", [])))
