"""``python -m broker`` leaves its start-up heap out of the garbage collector's walks
(``cli.freeze_start_up_heap``) and makes full collections rarer
(``cli.spare_full_collections``); the embedded broker leaves its host's collector alone."""

from __future__ import annotations

import subprocess
import sys

from broker import cli

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
            print(gc.get_freeze_count(), len(gc.get_objects()), gc.get_threshold()[2], flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            loop.call_later(0.05, check)

    loop.call_soon(check)
    await cli.serve(config)

asyncio.run(main())
"""


def test_the_program_freezes_what_it_holds_and_spares_full_collections_once_it_serves() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    frozen, still_walked, full_threshold = map(int, out)
    # the imports alone are tens of thousands of objects; what is still walked is what the
    # loop made since
    assert frozen > 20_000
    assert still_walked < frozen / 10
    assert full_threshold == cli.FULL_COLLECTION_THRESHOLD


def test_an_embedded_broker_leaves_its_hosts_collector_alone() -> None:
    probe = (
        "import gc; from broker import Broker\n"
        "threshold = gc.get_threshold()\n"
        "with Broker() as b: assert b.port > 0\n"
        "print(gc.get_freeze_count(), gc.get_threshold() == threshold)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.split() == ["0", "True"]
