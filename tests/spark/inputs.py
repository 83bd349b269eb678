"""What the source tests publish and read with: numbered message bodies and option sets."""

from __future__ import annotations

from tests.spark.conftest import Broker


def bodies(n: int, prefix: str = "m") -> list[bytes]:
    """``n`` distinct bodies that sort in publishing order: ``m00000``, ``m00001``, ..."""
    return [f"{prefix}{i:05d}".encode() for i in range(n)]


def classic_options(broker: Broker, queue: str, **extra: str) -> dict[str, str]:
    return {"uri": broker.url, "queue": queue, **extra}


def stream_options(broker: Broker, queue: str, **extra: str) -> dict[str, str]:
    return {"uri": broker.url, "queue": queue, "queueType": "stream", **extra}
