"""A streaming query in a driver process of its own, killed with SIGKILL mid-stream.

The driver (a Python process with its own JVM and Spark's Python workers, all in one process
group) runs a query whose foreachBatch sink writes each batch's bodies to ``batch-<id>`` in
an output directory, atomically: a batch replayed under the same id overwrites its file, as an
idempotent sink would. Once it has written a few batches the whole group gets SIGKILL: no
SIGTERM handler runs, sockets are closed by the kernel, the checkpoint is left as it was.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_DRIVER = """
import json, os, sys, time
from amqp_spark_demo.local_spark import local_session
options, checkpoint, out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
spark = local_session("killed-driver", cores=1)
def sink(df, batch_id):
    with open(os.path.join(out, f"tmp-{batch_id}"), "wb") as f:
        f.write(b"\\n".join(r.body for r in df.collect()))
    os.replace(os.path.join(out, f"tmp-{batch_id}"), os.path.join(out, f"batch-{batch_id}"))
    time.sleep(1)
df = spark.readStream.format("amqp").options(**options).load()
query = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).start()
query.awaitTermination(300)
"""


def read_batches(out: Path) -> dict[int, list[bytes]]:
    """The bodies the driver wrote, per batch id."""
    return {
        int(f.name.removeprefix("batch-")): [b for b in f.read_bytes().split(b"\n") if b]
        for f in out.glob("batch-*")
    }


def run_until_killed(
    options: dict[str, str], checkpoint: str, out: Path, batches: int = 2, timeout: float = 240
) -> dict[int, list[bytes]]:
    """Run the query in its own driver until it wrote ``batches`` batches (within ``timeout``
    seconds), SIGKILL it, and return what it wrote per batch id."""
    out.mkdir(exist_ok=True)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, json.dumps(options), checkpoint, str(out)],
        env=env,
        start_new_session=True,  # its JVM and Python workers share the group we kill
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while len(read_batches(out)) < batches and time.monotonic() < deadline:
            assert driver.poll() is None, f"the driver exited early ({driver.returncode})"
            time.sleep(0.2)
        assert len(read_batches(out)) >= batches, f"no {batches} batches within {timeout} s"
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
    return read_batches(out)
