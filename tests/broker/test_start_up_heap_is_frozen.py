"""``python -m broker`` leaves its start-up heap out of the garbage collector's walks
(``cli.freeze_start_up_heap``); the embedded broker leaves its host's heap alone."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import asyncio, gc, os, signal
from broker import cli
from broker.config import BrokerConfig

config = BrokerConfig(port=0, data_dir=None, stream_port=None)
config.management.enabled = False

async def main():
    loop = asyncio.get_running_loop()
    polls = iter(range(400))

    def check():
        if gc.get_freeze_count() > 0 or next(polls, None) is None:
            print(gc.get_freeze_count(), len(gc.get_objects()), flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            loop.call_later(0.05, check)

    loop.call_soon(check)
    await cli.serve(config)

asyncio.run(main())
"""


def test_the_program_freezes_what_it_holds_once_it_serves() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    frozen, still_walked = int(out[0]), int(out[1])
    # the imports alone are tens of thousands of objects; what is still walked is what the
    # loop made since
    assert frozen > 20_000
    assert still_walked < frozen / 10


def test_an_embedded_broker_leaves_its_hosts_heap_alone() -> None:
    probe = (
        "import gc; from broker import Broker\n"
        "with Broker() as b: assert b.port > 0\n"
        "print(gc.get_freeze_count())"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.split() == ["0"]
