"""A bundled broker whose process's descriptors a test can use up: ``python -m
tests.support.starved_broker --data-dir DIR --port N [--management-port M] [--stream-port S]``
(0: no stream listener), run by testbed/broker_process.py under a low open-files limit.

It logs to stderr as the ``amqp-broker`` program does. SIGUSR1 makes it open /dev/null until
no descriptor is left ("holding N descriptors" on stderr); SIGUSR2 closes them ("released").
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from types import FrameType

from broker import Broker

held: list[int] = []


def exhaust(signum: int, frame: FrameType | None) -> None:
    while True:
        try:
            held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            break
    print(f"holding {len(held)} descriptors", file=sys.stderr, flush=True)


def release(signum: int, frame: FrameType | None) -> None:
    for fd in held:
        os.close(fd)
    held.clear()
    print("released", file=sys.stderr, flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--management-port", type=int, default=0)
    p.add_argument("--stream-port", type=int, default=0)
    args = p.parse_args()
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    signal.signal(signal.SIGUSR1, exhaust)
    signal.signal(signal.SIGUSR2, release)
    with Broker(
        port=args.port,
        data_dir=args.data_dir,
        config={"heartbeat": 0},
        management_port=args.management_port,
        stream_port=args.stream_port or None,
    ):
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
