"""How long a query run stopped by SIGTERM keeps its consumer of a classic queue, when the
signal lands inside a call of the reader (issue 36: a restarted PySpark 4.0 query waited
more than 120 s for new messages under load).

A child process plays Spark's source runner: it builds the runner-side reader (default
window, the broker's heartbeat), reads and commits a batch of 8 messages as Spark does, and
then, in a later call, sends itself SIGTERM at the moment the code named by ``--where``
runs (``enqueue``: inside a send, holding the send lock and a channel's lock, as a depth
question of ``reportLatestOffset`` is sent; ``drain_deliveries``: holding the lock of the
channel it drains, in ``latestOffset``). The parent then publishes 5 messages and times
how long a new consumer (the restarted run) takes to receive them, and whether the child
ended (within 30 s of the signal). ``--code DIR`` puts another checkout's packages first
(to measure code before a fix).

    .venv/bin/python scripts/measure_stopped_run.py --where enqueue [--code /tmp/old]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
url, queue, where = sys.argv[2:5]
from pyspark.sql.streaming.datasource import ReadMaxRows
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.reader_choice import micro_batch_reader

reader = micro_batch_reader(SourceOptions.parse({"uri": url, "queue": queue}))
start = reader.initialOffset()
end = start
while sum(end["deliveryTags"].values()) < 8:
    time.sleep(0.1)
    end = reader.latestOffset(start, ReadMaxRows(100))
reader.partitions(start, end)
reader.commit(end)
armed = False

def trace(frame, event, arg):
    global armed
    if event == "call" and armed and frame.f_back and frame.f_back.f_code.co_name == where:
        armed = False
        print("sigterm", time.time(), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

sys.settrace(trace)
time.sleep(1.1)  # the next depth question is due
armed = True
while True:  # Spark's idle polls at a processing-time trigger
    reader.latestOffset(end, ReadMaxRows(100))
    reader.reportLatestOffset()
    time.sleep(0.5)
"""


def measure(url: str, code: str, where: str, timeout: float) -> dict[str, object]:
    from amqp_spark.client import connect

    conn = connect(url)
    ch = conn.channel()
    queue = ch.queue_declare("", durable=True, exclusive=False, auto_delete=False).queue
    for i in range(8):
        ch.basic_publish("", queue, f"m{i}".encode())
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, code, url, queue, where],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.startswith("sigterm"), line
    signalled = float(line.split()[1])
    for i in range(5):
        ch.basic_publish("", queue, f"after{i}".encode())
    restarted = conn.channel()
    restarted.basic_qos(prefetch_count=100)
    restarted.basic_consume(queue)
    got = 0
    deadline = time.monotonic() + timeout
    while got < 5 and time.monotonic() < deadline:
        d = restarted.next_delivery(timeout=0.5)
        if d is not None and d.body.startswith(b"after"):
            got += 1
    taken = time.time() - signalled
    try:
        ended: int | None = child.wait(timeout=max(0.0, 30.0 - taken))
        ended_after: float | None = time.time() - signalled
    except subprocess.TimeoutExpired:  # still running 30 s after the signal
        ended = ended_after = None
        child.kill()
        child.wait()
    ch.queue_delete(queue)
    conn.close()
    return {
        "where": where,
        "code": code,
        "new_messages_read": got,
        "seconds_after_sigterm": round(taken, 1),
        "runner_exit": ended,
        "runner_exit_seconds_after_sigterm": None if ended_after is None else round(ended_after, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", choices=["enqueue", "drain_deliveries"], default="enqueue")
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose packages to run")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from testbed.rabbitmq import rabbitmq

    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with rabbitmq(4) as url:
        print(json.dumps(measure(url, args.code, args.where, args.timeout)))


if __name__ == "__main__":
    main()
